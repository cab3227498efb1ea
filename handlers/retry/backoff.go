package retry

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// delay returns the wait after the given failed attempt (1 for the first),
// before jitter: Backoff*2^(attempt-1) capped at MaxBackoff when MaxBackoff is
// set, otherwise Backoff. It never overflows and is never negative.
func (c configuration) delay(attempt int) time.Duration {
	if c.maxBackoff <= 0 {
		return c.backoff
	}
	return doubled(c.backoff, c.maxBackoff, attempt)
}

// doubled is base*2^(n-1) capped at ceiling (> 0), without overflow.
func doubled(base, ceiling time.Duration, n int) time.Duration {
	if base >= ceiling {
		return ceiling
	}
	if n <= 1 {
		return base
	}
	shift := n - 1
	if shift >= 62 || base > ceiling>>uint(shift) {
		return ceiling
	}
	return base << uint(shift)
}

// outageDelay returns the wait after the given consecutive outage failure (1
// for the first), before jitter: Backoff doubled each time, capped at
// MaxOutageBackoff whatever MaxBackoff says.
func (c configuration) outageDelay(try int) time.Duration {
	return doubled(c.backoff, c.maxOutage, try)
}

// jittered spreads base by ±jitter using random r in [0, 1), then clamps the
// result to [0, ceiling], where ceiling is MaxBackoff when set.
func (c configuration) jittered(base time.Duration, r float64) time.Duration {
	return c.spread(base, r, c.maxBackoff)
}

// spread is jittered with the given ceiling (none when ceiling <= 0).
func (c configuration) spread(base time.Duration, r float64, maxBackoff time.Duration) time.Duration {
	if c.jitter <= 0 || base <= 0 {
		return base
	}
	if math.IsNaN(r) || r < 0 {
		r = 0
	}
	if r >= 1 {
		r = math.Nextafter(1, 0)
	}
	value := float64(base) * (1 + c.jitter*(2*r-1))
	ceiling := float64(math.MaxInt64)
	if maxBackoff > 0 {
		ceiling = float64(maxBackoff)
	}
	switch {
	case value <= 0:
		return 0
	case value >= ceiling:
		if maxBackoff > 0 {
			return maxBackoff
		}
		return time.Duration(math.MaxInt64)
	default:
		return time.Duration(value)
	}
}

// wait returns the jittered wait after the given failed attempt: the
// policy's, unless a shorthand (Backoff, MaxBackoff, JitterFactor) replaced it.
func (c configuration) wait(attempt int) time.Duration {
	if !c.shorthand {
		return c.policy.Delay(attempt, c.random)
	}
	return c.jittered(c.delay(attempt), c.random())
}

// outageWait returns the jittered wait after the given consecutive outage
// failure; it never exceeds MaxOutageBackoff.
func (c configuration) outageWait(try int) time.Duration {
	return c.spread(c.outageDelay(try), c.random(), c.maxOutage)
}

func defaultRandom() float64 { return rand.Float64() }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
