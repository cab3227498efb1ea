package retrypolicy

import "time"

// DelayName writes a delay as rung names write it, in whole seconds with the
// fraction dropped: Nh when it divides into hours, else Nm when it divides
// into minutes, else Ns ("80s", not "1m20s"); under a second is "0s". The
// scheduler's ladder (acemq.schedule.1h, .10m, .1m, .10s, .1s) names its
// rungs with it, so both ladders spell a delay alike.
func DelayName(delay time.Duration) string {
	return wholeSeconds(int64(delay / time.Second))
}
