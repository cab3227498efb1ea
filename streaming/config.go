package streaming

import (
	"context"
	"log/slog"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type config struct {
	subscriptions []*Subscription
	logger        *slog.Logger
	monitor       Monitor
	ctx           context.Context
}

// Subscriptions replaces the subscriptions to consume.
func (singleton) Subscriptions(subscriptions ...*Subscription) option {
	return func(c *config) { c.subscriptions = append([]*Subscription(nil), subscriptions...) }
}

// AddSubscriptions adds subscriptions to those already configured.
func (singleton) AddSubscriptions(subscriptions ...*Subscription) option {
	return func(c *config) { c.subscriptions = append(c.subscriptions, subscriptions...) }
}

// Logger sets the logger; the default is slog.Default(), so a stalled stream
// is never silent.
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *config) { c.logger = logger }
}

// Monitor sets the monitor; the default ignores every event.
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// Context sets the parent context. Its values reach handlers; its cancellation
// acts like Close. The default is context.Background().
func (singleton) Context(ctx context.Context) option {
	return func(c *config) { c.ctx = ctx }
}

func newConfig(options []option) config {
	c := config{}
	for _, apply := range options {
		if apply != nil {
			apply(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	return c
}
