package streaming

import (
	"context"
	"log/slog"
	"time"
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
	clock         clock
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

// withClock replaces the clock (tests).
func withClock(clock clock) option {
	return func(c *config) { c.clock = clock }
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
	if c.clock == nil {
		c.clock = realClock{}
	}
	return c
}

// clock is the runtime's view of time, replaced in tests.
type clock interface {
	Now() time.Time
	// Sleep waits d or until ctx ends and reports whether the whole wait passed.
	Sleep(ctx context.Context, d time.Duration) bool
	// After returns a channel that receives once d has passed, and a function
	// that releases the timer.
	After(d time.Duration) (<-chan time.Time, func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (realClock) After(d time.Duration) (<-chan time.Time, func()) {
	timer := time.NewTimer(d)
	return timer.C, func() { timer.Stop() }
}
