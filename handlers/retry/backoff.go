package retry

import "time"

// wait returns the jittered wait after the given failed attempt.
func (c config) wait(attempt int) time.Duration {
	return c.policy.Delay(attempt, c.random)
}

// outageWait returns the jittered wait after the given consecutive outage
// failure; it never exceeds MaxOutageBackoff.
func (c config) outageWait(try int) time.Duration {
	return c.outage.Delay(try, c.random)
}
