package retrypolicy

import (
	"fmt"
	"time"
)

// Decision is a policy's answer for a message whose attempt failed: retry
// after a wait, or give up with a reason.
type Decision struct {
	// Retry is true when the message may be tried again.
	Retry bool
	// Delay is the scheduled wait before the next attempt, without jitter;
	// zero when giving up. A wait held in the process is jittered by
	// Policy.Delay; one held by the broker is exactly Delay.
	Delay time.Duration
	// InBroker is true when the wait is held by the broker, in the rung
	// Policy.RungFor(queue, Delay) picks.
	InBroker bool
	// Reason says why the policy gave up, empty when Retry: "exhausted N
	// attempts" ("exhausted 1 attempt" when N is 1) or "exceeded the maximum
	// message age of <d>", with d written as time.Duration writes it (1h0m0s).
	// The caller appends ": " and the handler's error to make the
	// x-acemq-error reason.
	Reason string
}

// Decide answers for a message whose attempt (its x-acemq-attempt; below 1
// reads as 1) failed at now, first seen at firstSeen (its
// x-acemq-first-seen). It gives up when attempt has reached MaxAttempts
// (never for the zero Policy), or else when a maximum age is set and the
// message is older than it (now - firstSeen > MaxAge). The attempt limit is
// checked first. A zero firstSeen, or one after now, is an unknown age and
// never exceeds the limit: a missing header must not dead-letter a message.
// Otherwise it retries after Delay, held by the broker when InBroker.
func (p Policy) Decide(attempt int, firstSeen, now time.Time) Decision {
	attempt = max(attempt, 1)
	if p.attempts > 0 && attempt >= p.attempts {
		return Decision{Reason: exhaustedReason(p.attempts)}
	}
	if p.maxAge > 0 && !firstSeen.IsZero() && now.Sub(firstSeen) > p.maxAge {
		return Decision{Reason: fmt.Sprintf("exceeded the maximum message age of %s", p.maxAge)}
	}
	delay := p.scheduled(attempt)
	return Decision{Retry: true, Delay: delay, InBroker: p.InBroker(delay)}
}

func exhaustedReason(attempts int) string {
	if attempts == 1 {
		return "exhausted 1 attempt"
	}
	return fmt.Sprintf("exhausted %d attempts", attempts)
}
