package group

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/streaming"
)

// Options is the entry point for configuring New and NewEach:
// group.Options.Subscription(...).
var Options OptionSet

// OptionSet holds the options of New and NewEach; each method returns an
// Option. (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures New and NewEach.
type Option func(*config)

// DefaultStartTimeout bounds how long New waits for every member to open its
// stream when its context has no earlier deadline.
const DefaultStartTimeout = 30 * time.Second

type config struct {
	subscription []streaming.SubscriptionOption
	consumer     []streaming.Option // given to every member's streaming.New
	monitor      Monitor
	startTimeout time.Duration
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Positive(&c.startTimeout, DefaultStartTimeout)
	return c
}

// Subscription applies options to every member's subscription (buffer and
// batch capacity, more workers, retry policy, shutdown strategy, ...). Each
// member already has one worker running the group's handler. Default: none
// beyond that worker; the options add up over several calls.
func (OptionSet) Subscription(options ...streaming.SubscriptionOption) Option {
	return func(c *config) { c.subscription = append(c.subscription, options...) }
}

// Logger is every member's streaming logger. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return forward(streaming.Options.Logger(logger)) }

// StreamingMonitor is every member's streaming.Monitor. Default: the
// runtime's own (none).
func (OptionSet) StreamingMonitor(monitor streaming.Monitor) Option {
	return forward(streaming.Options.Monitor(monitor))
}

// forward hands option to every member's consumer.
func forward(option streaming.Option) Option {
	return func(c *config) { c.consumer = append(c.consumer, option) }
}

// Monitor receives the group's own events. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// StartTimeout bounds New's wait for every member to open its stream.
// Default: DefaultStartTimeout, 30 s; zero or negative means the default. The
// context New is given can end it sooner.
func (OptionSet) StartTimeout(timeout time.Duration) Option {
	return func(c *config) { c.startTimeout = timeout }
}
