package deadletter

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/retrypolicy"
)

// Options is the entry point for configuring New: deadletter.Options.Policy(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New (and DeclareRungs, which reads the same options).
type Option func(*config)

const defaultPublishTimeout = 30 * time.Second

type config struct {
	// policy is what Retry consults: the stated one, or retrypolicy.Default.
	// Its InBroker decides where a wait is held and its ladder names the
	// rungs.
	policy       retrypolicy.Policy
	policyStated bool
	// maxAttempts is the stated policy's attempts, written into the reason
	// of a message that exhausted them; 0 when no policy was stated.
	maxAttempts    int
	fullDelivery   bool
	refuseRetry    string
	publishTimeout time.Duration
	logger         *slog.Logger
	monitor        Monitor
	writer         *batch.Writer
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	if c.policy.IsZero() || c.policy.MaxAttempts() <= 0 {
		c.policy, c.policyStated = retrypolicy.Default(), false
	}
	if c.policyStated {
		c.maxAttempts = c.policy.MaxAttempts()
	}
	options.Positive(&c.publishTimeout, defaultPublishTimeout)
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// FullDelivery hands the inner handler messaging.Delivery values instead of
// Delivery.Message. Default: false, the decoded values, their envelopes in
// the context (messaging.DeliveriesFrom).
func (OptionSet) FullDelivery(full bool) Option { return func(c *config) { c.fullDelivery = full } }

// RefuseRetry makes Retry and InProgress park the delivery instead of
// republishing it to its queue, with the reason "this consumer does not retry
// (<why>): <err>": for a consumer that cannot take a message back (a stream,
// whose log cannot be republished into). Default: empty, they are accepted.
func (OptionSet) RefuseRetry(why string) Option { return func(c *config) { c.refuseRetry = why } }

// Policy states the retry budget as one value (see package retrypolicy), the
// same value given to retry.Options.Policy: its attempts are written into the
// reason of a message that exhausted them ("exhausted N attempts: ..."), and
// it bounds Retry, whose waits, broker rungs (Policy.WaitInBrokerFrom) and
// maximum age it gives. Default: retrypolicy.Default's five attempts bound
// Retry, which republishes at once, and the reason of a message that still
// fails says "the handler failed: ..." without counting attempts it was not
// told of.
func (OptionSet) Policy(policy retrypolicy.Policy) Option {
	return func(c *config) { c.policy, c.policyStated = policy, true }
}

// PublishTimeout bounds each set-aside or retry republish, independently of
// the handler's context. Default: 30 s (zero or negative means the default).
func (OptionSet) PublishTimeout(timeout time.Duration) Option {
	return func(c *config) { c.publishTimeout = timeout }
}

// Logger sets the logger. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives a callback for each settlement. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Writer publishes the copies and declares the retry rungs through writer,
// which several decorators may share (the streaming runtime shares one among
// the workers of a consumer), so they cost one connection between them. Its
// owner closes it; the decorator's Close leaves it open. Default: a
// batch.Writer of the decorator's own over New's connector, closed by Close.
func (OptionSet) Writer(writer *batch.Writer) Option { return func(c *config) { c.writer = writer } }

// midpoint makes Policy.Delay return the scheduled wait, without jitter.
func midpoint() float64 { return 0.5 }

// wait is the wait after the given failed attempt and whether the broker
// holds it (the policy's InBroker, decided on the wait before jitter): the
// stated policy's, or none when no policy was stated.
func (c config) wait(attempt int) (delay time.Duration, inBroker bool) {
	if !c.policyStated {
		return 0, false
	}
	if scheduled := c.policy.Delay(attempt, midpoint); c.policy.InBroker(scheduled) {
		return scheduled, true
	}
	return c.policy.Delay(attempt, nil), false
}

// rungFor is the rung that holds a broker wait of delay for queue: the
// policy's ladder rung when the ladder has one at least as long, else the
// rung a policy of that one wait would have (its whole seconds rounded up),
// so a rung's name always says its TTL.
func (c config) rungFor(queue string, delay time.Duration) retrypolicy.Rung {
	if rung, ok := c.policy.RungFor(queue, delay); ok && rung.TTL >= delay {
		return rung
	}
	rung, _ := retrypolicy.Fixed(2, delay).WaitInBrokerFrom(delay).RungFor(queue, delay)
	return rung
}

// attempts is the budget Retry applies: the policy's.
func (c config) attempts() int {
	return c.policy.MaxAttempts()
}
