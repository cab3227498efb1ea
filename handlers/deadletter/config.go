package deadletter

import (
	"context"
	"log/slog"
	"time"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

const (
	defaultPublishTimeout      = 30 * time.Second
	defaultBrokerWaitThreshold = 30 * time.Second
)

type config struct {
	fullDelivery        bool
	maxAttempts         int
	publishTimeout      time.Duration
	brokerWaitThreshold time.Duration
	retryDelay          func(attempt int) time.Duration
	logger              *slog.Logger
	monitor             Monitor
	sleep               func(ctx context.Context, d time.Duration) bool
}

// FullDelivery hands the inner handler messaging.Delivery values instead of
// Delivery.Message (default false). Reject, Park, Retry and InProgress need it.
func (singleton) FullDelivery(full bool) option {
	return func(c *config) { c.fullDelivery = full }
}

// MaxAttempts states the retry budget, counting the first delivery: the number
// of attempts the inner retry decorator makes, written into the reason of a
// message that exhausted it ("exhausted N attempts: ..."), and the limit
// Retry applies to x-acemq-attempt. Zero (the default) means unknown: a failed
// message's reason is "the handler failed: ...", and Retry never gives up.
func (singleton) MaxAttempts(attempts int) option {
	return func(c *config) { c.maxAttempts = max(attempts, 0) }
}

// PublishTimeout bounds each set-aside or retry republish (default 30 s; zero
// or negative means the default). It is independent of the handler's context.
func (singleton) PublishTimeout(timeout time.Duration) option {
	return func(c *config) { c.publishTimeout = timeout }
}

// BrokerWaitThreshold is the shortest Retry wait that is held by the broker (a
// {queue}.retry.{d} rung) instead of in the process (default 30 s; zero or
// negative means the default). It is also the longest wait ever held in the
// process: when the rung cannot be used (the connection is not a Declarer, or
// declaring or publishing to the rung fails), a longer wait fails the
// settlement, so the message is redelivered instead of holding a prefetch
// slot for minutes.
func (singleton) BrokerWaitThreshold(threshold time.Duration) option {
	return func(c *config) { c.brokerWaitThreshold = threshold }
}

// RetryDelay sets the policy Retry consults: the wait after the given failed
// attempt (1 for the first delivery) before the message is republished. The
// default is no wait.
func (singleton) RetryDelay(delay func(attempt int) time.Duration) option {
	return func(c *config) { c.retryDelay = delay }
}

// Logger sets the logger; the default is slog.Default().
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *config) { c.logger = logger }
}

// Monitor sets the monitor; the default ignores every event.
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// withSleeper replaces the in-process wait (tests).
func withSleeper(sleep func(ctx context.Context, d time.Duration) bool) option {
	return func(c *config) { c.sleep = sleep }
}

func newConfig(options []option) config {
	c := config{}
	for _, apply := range options {
		if apply != nil {
			apply(&c)
		}
	}
	if c.publishTimeout <= 0 {
		c.publishTimeout = defaultPublishTimeout
	}
	if c.brokerWaitThreshold <= 0 {
		c.brokerWaitThreshold = defaultBrokerWaitThreshold
	}
	if c.retryDelay == nil {
		c.retryDelay = func(int) time.Duration { return 0 }
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return c
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
