package retry

import (
	"math/rand/v2"
	"time"
)

// wait returns the jittered wait after the given failed attempt: the
// policy's, unless a shorthand (Backoff, MaxBackoff, JitterFactor) replaced it.
func (c configuration) wait(attempt int) time.Duration {
	return c.policy.Delay(attempt, c.random)
}

// outageWait returns the jittered wait after the given consecutive outage
// failure; it never exceeds MaxOutageBackoff.
func (c configuration) outageWait(try int) time.Duration {
	return c.outage.Delay(try, c.random)
}

func defaultRandom() float64 { return rand.Float64() }
