package group

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/streaming"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values.
type Option = option

// DefaultStartTimeout bounds how long New waits for every member to open its
// stream when its context has no earlier deadline.
const DefaultStartTimeout = 30 * time.Second

type config struct {
	subscription []streaming.SubscriptionOption
	logger       *slog.Logger
	streaming    streaming.Monitor
	monitor      Monitor
	startTimeout time.Duration
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.startTimeout <= 0 {
		c.startTimeout = DefaultStartTimeout
	}
	return c
}

// Subscription applies options to every member's subscription (buffer and
// batch capacity, more workers, retry policy, shutdown strategy, ...). Each
// member already has one worker running the group's handler.
func (singleton) Subscription(options ...streaming.SubscriptionOption) option {
	return func(c *config) { c.subscription = append(c.subscription, options...) }
}

// Logger is every member's streaming logger (default slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *config) { c.logger = logger }
}

// StreamingMonitor is every member's streaming.Monitor (default: none).
func (singleton) StreamingMonitor(monitor streaming.Monitor) option {
	return func(c *config) { c.streaming = monitor }
}

// Monitor receives the group's own events (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// StartTimeout bounds New's wait for every member to open its stream
// (default DefaultStartTimeout, 30 s; zero or negative means the default).
// The context New is given can end it sooner.
func (singleton) StartTimeout(timeout time.Duration) option {
	return func(c *config) { c.startTimeout = timeout }
}
