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
	if c.backoff >= c.maxBackoff {
		return c.maxBackoff
	}
	if attempt <= 1 {
		return c.backoff
	}
	shift := attempt - 1
	if shift >= 62 || c.backoff > c.maxBackoff>>uint(shift) {
		return c.maxBackoff
	}
	return c.backoff << uint(shift)
}

// jittered spreads base by ±jitter using random r in [0, 1), then clamps the
// result to [0, ceiling], where ceiling is MaxBackoff when set.
func (c configuration) jittered(base time.Duration, r float64) time.Duration {
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
	if c.maxBackoff > 0 {
		ceiling = float64(c.maxBackoff)
	}
	switch {
	case value <= 0:
		return 0
	case value >= ceiling:
		if c.maxBackoff > 0 {
			return c.maxBackoff
		}
		return time.Duration(math.MaxInt64)
	default:
		return time.Duration(value)
	}
}

// wait returns the jittered wait after the given failed attempt.
func (c configuration) wait(attempt int) time.Duration {
	return c.jittered(c.delay(attempt), c.random())
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
