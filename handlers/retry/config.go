package retry

import (
	"log/slog"
	"math"
	"time"

	"github.com/warrenmq/messaging/retrypolicy"
)

// DefaultMaxOutageBackoff caps the wait between tries while a dependency is
// down (messaging.IsOutage).
const DefaultMaxOutageBackoff = 30 * time.Second

// Options is the entry point for configuring New: retry.Options.Backoff(time.Second).
var Options singleton

type singleton struct{}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type configuration struct {
	// policy gives the attempts and, unless shorthand is set, the waits.
	policy retrypolicy.Policy
	// shorthand is set by Backoff, MaxBackoff or JitterFactor: the waits
	// follow those three instead of the policy.
	shorthand   bool
	backoff     time.Duration
	maxBackoff  time.Duration
	jitter      float64
	maxAttempts int
	maxOutage   time.Duration
	// outage is the schedule of the waits between tries during an outage.
	outage    retrypolicy.Policy
	immediate []any
	logStack  bool
	logger    *slog.Logger
	monitor   Monitor
	random    func() float64
}

func newConfiguration(options []option) configuration {
	c := configuration{logStack: true}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.policy.IsZero() || c.policy.MaxAttempts() <= 0 {
		c.policy = retrypolicy.Default()
	}
	if c.maxAttempts <= 0 {
		c.maxAttempts = c.policy.MaxAttempts()
	}
	if c.maxOutage <= 0 {
		c.maxOutage = DefaultMaxOutageBackoff
	}
	if c.shorthand {
		// The shorthand is a policy too: the waits are one mechanism.
		if c.backoff <= 0 {
			c.backoff = retrypolicy.DefaultInitialWait
		}
		c.maxBackoff = max(c.maxBackoff, 0)
		if c.maxBackoff > 0 {
			c.policy = retrypolicy.Exponential(c.maxAttempts, min(c.backoff, c.maxBackoff), c.maxBackoff)
		} else {
			c.policy = retrypolicy.Fixed(c.maxAttempts, c.backoff)
		}
		c.policy = c.policy.WithJitter(c.jitter)
	} else if schedule := c.policy.Schedule(); len(schedule) > 0 && schedule[0] > 0 {
		c.backoff = schedule[0] // the outage wait starts from the policy's first wait
	} else {
		c.backoff = retrypolicy.DefaultInitialWait
	}
	// Outage tries double from the first wait up to MaxOutageBackoff, jittered
	// as the policy is; they count no attempt, so the attempts here are moot.
	c.outage = retrypolicy.Exponential(1, min(c.backoff, c.maxOutage), c.maxOutage).WithJitter(c.policy.Jitter())
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.random == nil {
		c.random = defaultRandom
	}
	return c
}

// Policy states the retry budget as one value (see package retrypolicy):
// how many attempts, the first included, and the wait after each failed one,
// jittered as the policy says. Every wait is held in the process, since the
// same batch is run again; a policy's broker-wait threshold does not apply
// here. The zero Policy means retrypolicy.Default. MaxAttempts, given as well,
// overrides the policy's attempts; Backoff, MaxBackoff and JitterFactor
// replace its waits. Share the value with deadletter.Options.Policy so the
// reason of a dead-lettered message states the budget that was spent.
func (singleton) Policy(policy retrypolicy.Policy) option {
	return func(c *configuration) { c.policy = policy }
}

// Backoff is a shorthand that replaces the policy's waits: the wait after the
// first failure (default 1 s). With MaxBackoff set, each later wait doubles
// up to MaxBackoff; without it every wait is Backoff. Zero or negative means
// the default. The attempts stay the policy's (five by default).
func (singleton) Backoff(d time.Duration) option {
	return func(c *configuration) { c.backoff, c.shorthand = d, true }
}

// MaxBackoff is a shorthand (see Backoff) that caps the exponential growth of
// the wait. Zero or negative disables growth: every wait is Backoff.
func (singleton) MaxBackoff(d time.Duration) option {
	return func(c *configuration) { c.maxBackoff, c.shorthand = d, true }
}

// JitterFactor is a shorthand (see Backoff) that spreads each wait by up to
// ±factor of itself (0 to 1; values outside are clamped). A jittered wait is
// never negative and never above MaxBackoff when MaxBackoff is set.
func (singleton) JitterFactor(factor float64) option {
	return func(c *configuration) {
		c.shorthand = true
		switch {
		case math.IsNaN(factor) || factor < 0:
			c.jitter = 0
		case factor > 1:
			c.jitter = 1
		default:
			c.jitter = factor
		}
	}
}

// MaxAttempts is a shorthand that overrides the policy's attempts: how many
// times the batch is handled, the first attempt included. After the last
// attempt the last panic value propagates. Zero or negative means the
// policy's (five by default): there is no unlimited budget.
func (singleton) MaxAttempts(n int) option {
	return func(c *configuration) { c.maxAttempts = n }
}

// MaxOutageBackoff caps the wait between tries while the failure is a
// dependency's (messaging.IsOutage: the database or broker unreachable, a
// transaction that cannot begin or commit, a refused or reset connection, a
// timeout). Such tries count no attempt: the batch is held, and tried again
// after Backoff doubled each time up to this cap (default 30 s; zero or
// negative means the default), until the dependency answers, the failure
// becomes the message's own, or the context ends.
func (singleton) MaxOutageBackoff(d time.Duration) option {
	return func(c *configuration) { c.maxOutage = d }
}

// ImmediateRetry names panic values that retry at once, without waiting: a value
// equal to the panic value, or an error that the panic value matches with
// errors.Is. The attempt still counts against the budget.
func (singleton) ImmediateRetry(values ...any) option {
	return func(c *configuration) { c.immediate = append(c.immediate, values...) }
}

// LogStackTrace includes the panicking goroutine's stack in the ERROR log line
// (default on).
func (singleton) LogStackTrace(enabled bool) option {
	return func(c *configuration) { c.logStack = enabled }
}

// Logger sets the logger for failed attempts (default slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *configuration) { c.logger = logger }
}

// Monitor sets the callbacks for each attempt (default NopMonitor).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *configuration) { c.monitor = monitor }
}

// Random replaces the jitter's random source, which must return values in
// [0, 1). Nil means the default.
func (singleton) Random(random func() float64) option {
	return func(c *configuration) { c.random = random }
}
