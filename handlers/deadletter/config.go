package deadletter

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/retrypolicy"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

const defaultPublishTimeout = 30 * time.Second

type config struct {
	// policy is what Retry consults: the stated one, or retrypolicy.Default,
	// with Options.BrokerWaitThreshold applied when it was given. Its
	// InBroker decides where a wait is held and its ladder names the rungs.
	policy       retrypolicy.Policy
	policyStated bool
	fullDelivery bool
	refuseRetry  string
	maxAttempts  int
	// threshold is Options.BrokerWaitThreshold when thresholdSet.
	threshold      time.Duration
	thresholdSet   bool
	publishTimeout time.Duration
	// retryDelay is Options.RetryDelay, nil when not given.
	retryDelay func(attempt int) time.Duration
	logger     *slog.Logger
	monitor    Monitor
	writer     *batch.Writer
}

// FullDelivery hands the inner handler messaging.Delivery values instead of
// Delivery.Message (default false). Reject, Park, Retry and InProgress need it.
func (singleton) FullDelivery(full bool) option {
	return func(c *config) { c.fullDelivery = full }
}

// RefuseRetry makes Retry and InProgress park the delivery instead of
// republishing it to its queue, with the reason "this consumer does not retry
// (<why>): <err>": for a consumer that cannot take a message back (a stream,
// whose log cannot be republished into). Empty (the default) accepts them.
func (singleton) RefuseRetry(why string) option {
	return func(c *config) { c.refuseRetry = why }
}

// Policy states the retry budget as one value (see package retrypolicy),
// the same value given to retry.Options.Policy: its attempts are written into
// the reason of a message that exhausted them ("exhausted N attempts: ...")
// and bound Retry, whose waits, broker rungs and maximum age it gives. Without
// it Retry uses retrypolicy.Default (five attempts), so no message is retried
// for ever. MaxAttempts, RetryDelay and BrokerWaitThreshold, given as well,
// override the policy's attempts, waits and threshold.
func (singleton) Policy(policy retrypolicy.Policy) option {
	return func(c *config) { c.policy, c.policyStated = policy, true }
}

// MaxAttempts is a shorthand that states the retry budget, counting the first delivery: the number
// of attempts the inner retry decorator makes, written into the reason of a
// message that exhausted it ("exhausted N attempts: ..."), and the limit
// Retry applies to x-acemq-attempt. Zero means the policy's (Options.Policy);
// when no policy is stated either, a failed message's reason is "the handler
// failed: ...", and Retry gives up after retrypolicy.Default's five attempts.
func (singleton) MaxAttempts(attempts int) option {
	return func(c *config) { c.maxAttempts = max(attempts, 0) }
}

// PublishTimeout bounds each set-aside or retry republish (default 30 s; zero
// or negative means the default). It is independent of the handler's context.
func (singleton) PublishTimeout(timeout time.Duration) option {
	return func(c *config) { c.publishTimeout = timeout }
}

// BrokerWaitThreshold is the shortest Retry wait that is held by the broker (a
// {queue}.retry.{d} rung) instead of in the process; it overrides the
// policy's (retrypolicy.Policy.WaitInBrokerFrom, 30 s unless the policy says
// otherwise). Zero means never: every wait is held in the process. A negative
// threshold reads as zero. A positive threshold is also the longest wait ever
// held in the process: when the rung cannot be used (the connection is not a
// Declarer, or declaring or publishing to the rung fails), a longer wait
// fails the settlement, so the message is redelivered instead of holding a
// prefetch slot for minutes.
func (singleton) BrokerWaitThreshold(threshold time.Duration) option {
	return func(c *config) { c.threshold, c.thresholdSet = max(threshold, 0), true }
}

// RetryDelay sets the wait Retry applies after the given failed attempt (1
// for the first delivery) before the message is republished, overriding the
// policy's waits. A wait the policy's threshold sends to the broker is held
// by the rung of its whole seconds rounded up ({queue}.retry.31s for 30.5 s).
// The default is the stated policy's waits, or no wait when no policy is
// stated.
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

// Writer publishes the copies and declares the retry rungs through writer,
// which several decorators may share (the streaming runtime shares one among
// the workers of a consumer), so they cost one connection between them. Its
// owner closes it; the decorator's Close leaves it open. The default is a
// batch.Writer of the decorator's own over New's connector, closed by Close.
func (singleton) Writer(writer *batch.Writer) option {
	return func(c *config) { c.writer = writer }
}

func newConfig(options []option) config {
	c := config{}
	for _, apply := range options {
		if apply != nil {
			apply(&c)
		}
	}
	if c.policy.IsZero() || c.policy.MaxAttempts() <= 0 {
		c.policy = defaultPolicy()
	} else if c.maxAttempts == 0 {
		c.maxAttempts = c.policy.MaxAttempts()
	}
	if c.thresholdSet {
		c.policy = c.policy.WaitInBrokerFrom(c.threshold)
	}
	if c.publishTimeout <= 0 {
		c.publishTimeout = defaultPublishTimeout
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// defaultPolicy is the budget when none is stated: the retry decorator's.
func defaultPolicy() retrypolicy.Policy { return retrypolicy.Default() }

// midpoint makes Policy.Delay return the scheduled wait, without jitter.
func midpoint() float64 { return 0.5 }

// wait is the wait after the given failed attempt and whether the broker
// holds it (the policy's InBroker, decided on the wait before jitter).
func (c config) wait(attempt int) (delay time.Duration, inBroker bool) {
	switch {
	case c.retryDelay != nil:
		delay = max(c.retryDelay(attempt), 0)
		return delay, c.policy.InBroker(delay)
	case c.policyStated:
		if scheduled := c.policy.Delay(attempt, midpoint); c.policy.InBroker(scheduled) {
			return scheduled, true
		}
		return c.policy.Delay(attempt, nil), false
	default:
		return 0, false
	}
}

// rungFor is the rung that holds a broker wait of delay for queue: the
// policy's ladder rung when its waits are the policy's and the ladder has
// one at least as long, else the rung a policy of that one wait would have
// (its whole seconds rounded up), so a rung's name always says its TTL.
func (c config) rungFor(queue string, delay time.Duration) retrypolicy.Rung {
	if c.retryDelay == nil {
		if rung, ok := c.policy.RungFor(queue, delay); ok && rung.TTL >= delay {
			return rung
		}
	}
	rung, _ := retrypolicy.Fixed(2, delay).WaitInBrokerFrom(delay).RungFor(queue, delay)
	return rung
}

// attempts is the budget Retry applies: MaxAttempts when stated, else the
// policy's.
func (c config) attempts() int {
	if c.maxAttempts > 0 {
		return c.maxAttempts
	}
	return c.policy.MaxAttempts()
}
