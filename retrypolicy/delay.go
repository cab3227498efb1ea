package retrypolicy

import (
	"math"
	"math/rand/v2"
	"time"
)

// ScheduleLimit is the longest Schedule returns. A policy with more attempts
// than ScheduleLimit+1 has a schedule cut at ScheduleLimit entries: every
// later wait equals the last one listed (a fixed wait never changes, and a
// doubling wait reaches its maximum within 64 steps), so the cut loses no
// rung, while an unbounded list could exhaust memory. Delay and Decide are not
// cut: they answer for any attempt number.
const ScheduleLimit = 1000

// Schedule lists the waits without jitter, in order: entry i is the wait
// after attempt i+1 failed, before attempt i+2. It has MaxAttempts-1 entries
// (at most ScheduleLimit), and none for None and the zero Policy. For example
// Exponential(4, time.Second, 3*time.Second).Schedule() is [1s 2s 3s] and
// Exponential(6, 10*time.Second, 5*time.Minute).Schedule() is
// [10s 20s 40s 80s 160s]. The slice is the caller's to keep or change.
func (p Policy) Schedule() []time.Duration {
	n := min(p.attempts-1, ScheduleLimit)
	if n <= 0 {
		return nil
	}
	schedule := make([]time.Duration, n)
	for i := range schedule {
		schedule[i] = p.scheduled(i + 1)
	}
	return schedule
}

// scheduled is the wait without jitter after the given failed attempt; it
// continues the formula past MaxAttempts and never overflows.
func (p Policy) scheduled(attempt int) time.Duration {
	switch p.kind {
	case kindFixed:
		return p.initial
	case kindExponential:
		return doubled(p.initial, p.maximum, max(attempt, 1)-1)
	default:
		return 0
	}
}

// doubled is initial*2^steps capped at maximum, computed without overflow:
// the shift is only taken when the result stays at or below maximum.
func doubled(initial, maximum time.Duration, steps int) time.Duration {
	if initial <= 0 {
		return 0
	}
	if initial >= maximum {
		return maximum
	}
	if steps >= 63 || initial > maximum>>uint(steps) {
		return maximum
	}
	return initial << uint(steps)
}

// InBroker reports whether a wait of delay is held by the broker in a rung
// queue rather than in the process: exactly when the threshold is above 0,
// delay is above 0, and delay is at least the threshold. It is decided on the
// scheduled wait, before jitter, so jitter never moves a wait between the
// process and the broker.
func (p Policy) InBroker(delay time.Duration) bool {
	threshold := p.BrokerWaitThreshold()
	return threshold > 0 && delay > 0 && delay >= threshold
}

// Delay is the wait after attempt failed and before attempt+1 (attempt 1 is
// the first delivery; below 1 reads as 1). A wait held by the broker
// (InBroker) is the scheduled wait exactly. A wait held in the process is
// spread by up to ±Jitter of itself, using random, which should return values
// in [0, 1) (values outside are clamped into it, NaN reads as 0); nil means
// math/rand/v2.Float64. The result is never negative: at most
// (1+Jitter) times the scheduled wait and at least (1-Jitter) times it, never
// above an Exponential policy's maximum (the maximum is the longest wait, with
// jitter too), and it never overflows. Beyond MaxAttempts the formula continues (the fixed
// wait, or the capped doubling), so Delay answers for any attempt; whether
// to retry at all is Decide's answer.
func (p Policy) Delay(attempt int, random func() float64) time.Duration {
	base := p.scheduled(attempt)
	if base <= 0 || p.jitter <= 0 || p.InBroker(base) {
		return base
	}
	if random == nil {
		random = rand.Float64
	}
	wait := spread(base, p.jitter, random())
	if p.kind == kindExponential && wait > p.maximum {
		return p.maximum
	}
	return wait
}

// spread returns base*(1 + factor*(2r-1)) for r clamped into [0, 1), floored
// at 0 and capped at the largest Duration.
func spread(base time.Duration, factor, r float64) time.Duration {
	switch {
	case math.IsNaN(r) || r < 0:
		r = 0
	case r >= 1:
		r = math.Nextafter(1, 0)
	}
	value := float64(base) * (1 + factor*(2*r-1))
	switch {
	case value <= 0:
		return 0
	case value >= math.MaxInt64: // float64(math.MaxInt64) is 2^63, out of range
		return time.Duration(math.MaxInt64)
	default:
		return time.Duration(value)
	}
}
