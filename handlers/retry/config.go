package retry

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/retrypolicy"
)

// DefaultMaxOutageBackoff caps the wait between tries while a dependency is
// down (messaging.IsOutage).
const DefaultMaxOutageBackoff = 30 * time.Second

// Options is the entry point for configuring New: retry.Options.Policy(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	// policy is the budget: the attempts and the waits between them.
	policy retrypolicy.Policy
	// backoff and maxBackoff are the core stack's shorthand for a policy's
	// waits, when given.
	backoff, maxBackoff time.Duration
	// maxAttempts and jitter, when set, are the core stack's shorthand for
	// the policy's attempts and jitter.
	maxAttempts int
	jitter      *float64
	maxOutage   time.Duration
	// outage is the schedule of the waits between tries during an outage.
	outage    retrypolicy.Policy
	immediate []any
	logStack  bool
	logger    *slog.Logger
	monitor   Monitor
	// attemptedOn is monitor when it hears streams, or nil.
	attemptedOn StreamMonitor
	random      func() float64
}

func newConfig(opts []Option) config {
	c := config{logStack: true}
	options.Apply(&c, opts)
	if c.policy.IsZero() || c.policy.MaxAttempts() <= 0 {
		c.policy = retrypolicy.Default()
	}
	options.Positive(&c.maxOutage, DefaultMaxOutageBackoff)
	c.policy = c.withShorthand(c.policy)
	first := retrypolicy.DefaultInitialWait
	if schedule := c.policy.Schedule(); len(schedule) > 0 && schedule[0] > 0 {
		first = schedule[0] // the outage wait starts from the policy's first wait
	}
	// Outage tries double from the first wait up to MaxOutageBackoff, jittered
	// as the policy is; they count no attempt, so the attempts here are moot.
	c.outage = retrypolicy.Exponential(1, min(first, c.maxOutage), c.maxOutage).WithJitter(c.policy.Jitter())
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	c.attemptedOn, _ = c.monitor.(StreamMonitor)
	return c
}

// attempted reports one attempt on stream to the monitor.
func (c config) attempted(stream string, attempt int, result any) {
	if c.attemptedOn != nil {
		c.attemptedOn.HandleAttemptedOn(stream, attempt, result)
		return
	}
	c.monitor.HandleAttempted(attempt, result)
}

// withShorthand is policy with its waits replaced by Backoff and MaxBackoff,
// when either was given: the shorthand builds a policy like any other.
func (c config) withShorthand(policy retrypolicy.Policy) retrypolicy.Policy {
	policy = c.withWaitShorthand(policy)
	if c.maxAttempts > 0 {
		policy = policy.WithAttempts(c.maxAttempts)
	}
	if c.jitter != nil {
		policy = policy.WithJitter(*c.jitter)
	}
	return policy
}

// withWaitShorthand is policy with its waits replaced by Backoff and
// MaxBackoff, when either was given.
func (c config) withWaitShorthand(policy retrypolicy.Policy) retrypolicy.Policy {
	if c.backoff == 0 && c.maxBackoff == 0 {
		return policy
	}
	backoff := c.backoff
	if backoff <= 0 {
		backoff = retrypolicy.DefaultInitialWait
	}
	if c.maxBackoff <= 0 {
		return retrypolicy.Fixed(policy.MaxAttempts(), backoff)
	}
	return retrypolicy.Exponential(policy.MaxAttempts(), min(backoff, c.maxBackoff), c.maxBackoff)
}

// Policy states the retry budget as one value (see package retrypolicy): how
// many attempts, the first included, and the wait after each failed one,
// jittered as the policy says. Every wait is held in the process, since the
// same batch is run again; a policy's broker-wait threshold does not apply
// here. Share the value with the settlement (streaming's
// SubscriptionOptions.Settlement, or deadletter.Options.Policy) so the reason
// of a dead-lettered message states the budget that was spent. Default:
// retrypolicy.Default, five attempts about 1, 2, 4 and 8 s apart.
func (OptionSet) Policy(policy retrypolicy.Policy) Option {
	return func(c *config) { c.policy = policy }
}

// Backoff is the core stack's shorthand for the policy's waits: the wait
// after the first failure. With MaxBackoff the waits double up to it, as
// retrypolicy.Exponential(attempts, backoff, maxBackoff) does (jittered by
// 0.2); without it every wait is Backoff, as retrypolicy.Fixed. The attempts
// stay the policy's (five by default). Default: the policy's waits; zero or
// negative with MaxBackoff set means 1 s.
func (OptionSet) Backoff(d time.Duration) Option { return func(c *config) { c.backoff = d } }

// MaxBackoff is the longest wait of the Backoff shorthand, which doubles up
// to it. Default: none, so every wait is Backoff.
func (OptionSet) MaxBackoff(d time.Duration) Option { return func(c *config) { c.maxBackoff = d } }

// MaxAttempts is the core stack's shorthand for the policy's attempts: how
// many times a batch is handled, the first included, as
// policy.WithAttempts(n). There is no unlimited budget: zero or negative
// means the policy's. Default: the policy's (five).
func (OptionSet) MaxAttempts(n int) Option { return func(c *config) { c.maxAttempts = n } }

// JitterFactor is the core stack's shorthand for the policy's jitter: each
// wait is spread by up to ±factor of itself (0 to 1; a value outside is
// clamped), as policy.WithJitter(factor). Default: the policy's (0.2 for an
// exponential one).
func (OptionSet) JitterFactor(factor float64) Option {
	return func(c *config) { c.jitter = &factor }
}

// MaxOutageBackoff caps the wait between tries while the failure is a
// dependency's (messaging.IsOutage: the database or broker unreachable, a
// transaction that cannot begin or commit, a refused or reset connection, a
// timeout). Such tries count no attempt: the batch is held, and tried again
// after the policy's first wait doubled each time up to this cap, until the
// dependency answers, the failure becomes the message's own, or the context
// ends. Default: 30 s (zero or negative means the default).
func (OptionSet) MaxOutageBackoff(d time.Duration) Option { return func(c *config) { c.maxOutage = d } }

// ImmediateRetry names panic values that retry at once, without waiting: a
// value equal to the panic value, or an error that the panic value matches
// with errors.Is. The attempt still counts against the budget. Default: none.
func (OptionSet) ImmediateRetry(values ...any) Option {
	return func(c *config) { c.immediate = append(c.immediate, values...) }
}

// LogStackTrace includes the panicking goroutine's stack in the ERROR line of
// the attempt that gives up (earlier attempts are WARN lines without it; the
// stack of each is logged at DEBUG). Default: on.
func (OptionSet) LogStackTrace(enabled bool) Option { return func(c *config) { c.logStack = enabled } }

// Logger sets the logger for failed attempts. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives a callback for each attempt and each outage wait; one that
// is also a StreamMonitor hears each attempt with its batch's stream.
// Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Random replaces the jitter's random source, which must return values in
// [0, 1). Default: math/rand/v2.Float64.
func (OptionSet) Random(random func() float64) Option { return func(c *config) { c.random = random } }
