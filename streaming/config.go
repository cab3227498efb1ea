package streaming

import (
	"context"
	"log/slog"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New:
// streaming.Options.Subscriptions(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	subscriptions []*Subscription
	logger        *slog.Logger
	monitor       Monitor
	ctx           context.Context
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default[context.Context](&c.ctx, context.Background())
	return c
}

// Subscriptions replaces the subscriptions to consume. Default: none.
func (OptionSet) Subscriptions(subscriptions ...*Subscription) Option {
	return func(c *config) { c.subscriptions = append([]*Subscription(nil), subscriptions...) }
}

// AddSubscriptions adds subscriptions to those already configured.
// Default: none.
func (OptionSet) AddSubscriptions(subscriptions ...*Subscription) Option {
	return func(c *config) { c.subscriptions = append(c.subscriptions, subscriptions...) }
}

// Logger sets the logger of the runtime and of its settlement. Default:
// slog.Default(), so a stalled stream is never silent.
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives the runtime's callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Context sets the parent context. Its values reach handlers; its
// cancellation acts like Close. Default: context.Background().
func (OptionSet) Context(ctx context.Context) Option { return func(c *config) { c.ctx = ctx } }
