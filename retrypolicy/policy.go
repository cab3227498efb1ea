package retrypolicy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Defaults a Policy uses when nothing else is stated.
const (
	// DefaultBrokerWaitThreshold is the shortest wait held by the broker when
	// WaitInBrokerFrom was not called: shorter waits are held in the process.
	DefaultBrokerWaitThreshold = 30 * time.Second
	// DefaultExponentialJitter is the jitter factor Exponential starts with.
	// Fixed and None start without jitter.
	DefaultExponentialJitter = 0.2
	// DefaultMaxAttempts is Default's budget, the first attempt included: a
	// message is handled at most five times. No policy is unlimited.
	DefaultMaxAttempts = 5
	// DefaultInitialWait is Default's first wait, and the first wait of every
	// reconnect and outage schedule of this module.
	DefaultInitialWait = time.Second
	// DefaultMaxWait is Default's longest wait between attempts.
	DefaultMaxWait = 30 * time.Second
)

// Default is the retry budget when none is stated: Exponential(5, 1s, 30s),
// so a failing message is handled at most five times, waiting about 1 s,
// 2 s, 4 s and 8 s (±20 %) between attempts: about 15 s in all before it is
// given up. handlers/retry, handlers/deadletter, the streaming runtime's
// settlement and the flows all use this one value when given none.
func Default() Policy {
	return Exponential(DefaultMaxAttempts, DefaultInitialWait, DefaultMaxWait)
}

// ErrInvalid is wrapped by every error Err reports, so a caller can test
// errors.Is(policy.Err(), retrypolicy.ErrInvalid).
var ErrInvalid = errors.New("retrypolicy: invalid policy")

// kind tells the constructors apart; the zero value is the zero Policy.
type kind uint8

const (
	kindUnset kind = iota
	kindNone
	kindFixed
	kindExponential
)

// Policy is a retry budget: how many attempts, how long to wait between them,
// where each wait is held, and how old a message may grow. It is an immutable
// value: every method returns a changed copy and leaves the receiver as it
// was, so one Policy can be shared by several decorators and goroutines.
// Build one with None, Fixed or Exponential; the zero Policy is described in
// the package documentation.
type Policy struct {
	kind     kind
	attempts int
	initial  time.Duration
	maximum  time.Duration
	jitter   float64
	maxAge   time.Duration
	// brokerFrom is the broker-wait threshold once brokerFromSet is true;
	// until then the threshold is DefaultBrokerWaitThreshold. Zero means
	// never in the broker.
	brokerFrom    time.Duration
	brokerFromSet bool
	err           error
}

// None tries a message once and never again: MaxAttempts is 1 and the
// schedule is empty. Decide gives up on the first failure with the reason
// "exhausted 1 attempt".
func None() Policy {
	return Policy{kind: kindNone, attempts: 1}
}

// Fixed tries a message at most attempts times (the first delivery
// included), waiting delay before each retry, without jitter. Fixed(3, 10*time.Second)
// has the schedule [10s 10s].
//
// An attempts below 1 is recorded in Err and read as 1; a negative delay is
// recorded and read as 0. A delay of 0 retries at once.
func Fixed(attempts int, delay time.Duration) Policy {
	p := Policy{kind: kindFixed, attempts: attempts, initial: delay, maximum: delay}
	p = p.checkAttempts("Fixed", attempts)
	if delay < 0 {
		p = p.invalid("Fixed: the delay %s is negative; it was read as 0, which retries at once", delay)
		p.initial, p.maximum = 0, 0
	}
	return p
}

// Exponential tries a message at most attempts times (the first delivery
// included). The first retry waits initial, and each later wait doubles,
// capped at maximum; the waits held in the process are jittered by
// DefaultExponentialJitter (0.2) unless WithJitter says otherwise.
// Exponential(4, time.Second, 3*time.Second) has the schedule [1s 2s 3s].
//
// An attempts below 1 is recorded in Err and read as 1; a negative initial or
// maximum is recorded and read as 0; a maximum below initial is recorded and
// raised to initial, so every wait is initial. An initial of 0 is valid and
// retries at once every time: zero does not double.
func Exponential(attempts int, initial, maximum time.Duration) Policy {
	p := Policy{kind: kindExponential, attempts: attempts, initial: initial, maximum: maximum, jitter: DefaultExponentialJitter}
	p = p.checkAttempts("Exponential", attempts)
	if initial < 0 {
		p = p.invalid("Exponential: the initial delay %s is negative; it was read as 0", initial)
		p.initial = 0
	}
	if maximum < 0 {
		p = p.invalid("Exponential: the maximum delay %s is negative; it was read as 0", maximum)
		p.maximum = 0
	}
	if p.maximum < p.initial {
		p = p.invalid("Exponential: the maximum delay %s is below the initial delay %s; it was raised to %s, so every wait is %s: pass a maximum at least as long as the initial delay",
			p.maximum, p.initial, p.initial, p.initial)
		p.maximum = p.initial
	}
	return p
}

// GiveUpAfter returns a copy that also gives up on a message older than age
// (measured from its first delivery's x-acemq-first-seen), whatever attempts
// remain. Zero removes the limit, which is also the default: there is no
// default maximum age. A negative age is recorded in Err and read as 0.
func (p Policy) GiveUpAfter(age time.Duration) Policy {
	if age < 0 {
		p = p.invalid("GiveUpAfter: the age %s is negative; it was read as 0, which sets no age limit", age)
		age = 0
	}
	p.maxAge = age
	return p
}

// WithAttempts returns a copy that tries a message at most attempts times,
// the first delivery included, keeping the waits (a schedule shorter than
// the attempts repeats its last wait). An attempts below 1 is recorded in Err
// and read as 1.
func (p Policy) WithAttempts(attempts int) Policy {
	p = p.checkAttempts("WithAttempts", attempts)
	if attempts >= 1 {
		p.attempts = attempts
	}
	if p.kind == kindUnset || p.kind == kindNone {
		p.kind = kindFixed
	}
	return p
}

// WithJitter returns a copy whose waits held in the process are spread by up
// to ±factor of themselves: 0.2 turns a 10 s wait into one between 8 s and
// 12 s. 0 turns jitter off. Waits held by the broker are never jittered. A
// factor outside 0..1 (or NaN) is recorded in Err and clamped into it (NaN
// reads as 0).
func (p Policy) WithJitter(factor float64) Policy {
	switch {
	case math.IsNaN(factor):
		p = p.invalid("WithJitter: the factor is NaN; it was read as 0, no jitter")
		factor = 0
	case factor < 0:
		p = p.invalid("WithJitter: the factor %v is below 0; it was read as 0, no jitter", factor)
		factor = 0
	case factor > 1:
		p = p.invalid("WithJitter: the factor %v is above 1; it was read as 1: pass a fraction of the wait, such as 0.2", factor)
		factor = 1
	}
	p.jitter = factor
	return p
}

// WaitInBrokerFrom returns a copy whose waits of at least threshold are held
// by the broker in a rung queue instead of in the process. Zero means never:
// every wait is held in the process. A policy on which WaitInBrokerFrom was
// never called (the zero Policy included) uses DefaultBrokerWaitThreshold,
// 30 s; the zero threshold is therefore only ever the one asked for. A
// negative threshold is recorded in Err and read as 0.
func (p Policy) WaitInBrokerFrom(threshold time.Duration) Policy {
	if threshold < 0 {
		p = p.invalid("WaitInBrokerFrom: the threshold %s is negative; it was read as 0, which holds every wait in the process", threshold)
		threshold = 0
	}
	p.brokerFrom, p.brokerFromSet = threshold, true
	return p
}

// MaxAttempts is how many times a message may be handled, the first delivery
// included: 1 for None, the count given to Fixed or Exponential, and 0 for the
// zero Policy, meaning no limit.
func (p Policy) MaxAttempts() int {
	return p.attempts
}

// MaxAge is the age beyond which Decide gives up, or 0 for no age limit (the
// default).
func (p Policy) MaxAge() time.Duration {
	return p.maxAge
}

// Jitter is the factor by which waits held in the process are spread: 0.2
// for Exponential, 0 for Fixed and None, unless WithJitter changed it.
func (p Policy) Jitter() float64 {
	return p.jitter
}

// BrokerWaitThreshold is the shortest wait held by the broker:
// DefaultBrokerWaitThreshold unless WaitInBrokerFrom set it, and 0 when no
// wait is ever held by the broker.
func (p Policy) BrokerWaitThreshold() time.Duration {
	if !p.brokerFromSet {
		return DefaultBrokerWaitThreshold
	}
	return p.brokerFrom
}

// IsZero reports whether p is the zero Policy, so a decorator can tell a
// policy that was never stated from None.
func (p Policy) IsZero() bool {
	return p == Policy{}
}

// Err reports the inputs that were out of range and what each was replaced
// with, joined, each wrapping ErrInvalid; nil when every input was valid. The
// policy is usable either way, but a decorator should refuse one with an
// error rather than run with values nobody asked for.
func (p Policy) Err() error {
	return p.err
}

// String describes the policy for logs, for example
// "exponential: 6 attempts, 10s doubling to 5m0s, jitter 0.2, no age limit, broker waits from 30s".
func (p Policy) String() string {
	var b strings.Builder
	switch p.kind {
	case kindUnset:
		b.WriteString("unset: no attempt limit, no wait")
	case kindNone:
		b.WriteString("none: 1 attempt")
	case kindFixed:
		fmt.Fprintf(&b, "fixed: %s, %s apart", attemptsText(p.attempts), p.initial)
	case kindExponential:
		fmt.Fprintf(&b, "exponential: %s, %s doubling to %s", attemptsText(p.attempts), p.initial, p.maximum)
	}
	b.WriteString(", jitter ")
	b.WriteString(strconv.FormatFloat(p.jitter, 'g', -1, 64))
	if p.maxAge > 0 {
		fmt.Fprintf(&b, ", give up after %s", p.maxAge)
	} else {
		b.WriteString(", no age limit")
	}
	if threshold := p.BrokerWaitThreshold(); threshold > 0 {
		fmt.Fprintf(&b, ", broker waits from %s", threshold)
	} else {
		b.WriteString(", no broker waits")
	}
	return b.String()
}

func attemptsText(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// checkAttempts records and replaces an attempt count below 1.
func (p Policy) checkAttempts(constructor string, attempts int) Policy {
	if attempts < 1 {
		p = p.invalid("%s: attempts is %d; a policy makes at least 1 attempt (the first delivery counts), so it was read as 1, which never retries", constructor, attempts)
		p.attempts = 1
	}
	return p
}

// invalid returns a copy with one more recorded input error.
func (p Policy) invalid(format string, args ...any) Policy {
	p.err = errors.Join(p.err, fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...))
	return p
}
