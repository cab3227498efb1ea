package retry

import (
	"math"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging/retrypolicy"
)

func TestBackoffFixture(t *testing.T) {
	gunit.Run(new(BackoffFixture), t)
}

type BackoffFixture struct {
	*gunit.Fixture
}

var randoms = []float64{0, 0.25, 0.5, 0.75, math.Nextafter(1, 0)}

func (f *BackoffFixture) TestAttempts1To200NeverNegativeNorAboveTheMaximum() {
	cases := []struct{ backoff, max time.Duration }{
		{5 * time.Second, time.Minute},
		{time.Nanosecond, time.Hour},
		{time.Hour, time.Second}, // backoff above the maximum
		{time.Duration(math.MaxInt64 / 3), time.Duration(math.MaxInt64)},
		{time.Second, time.Duration(math.MaxInt64)},
	}
	for _, tc := range cases {
		for _, jitter := range []float64{0, 0.2, 1} {
			for _, r := range randoms {
				c := newConfig([]Option{
					Options.Policy(retrypolicy.Exponential(5, min(tc.backoff, tc.max), tc.max).WithJitter(jitter)),
					Options.Random(func() float64 { return r }),
				})
				for attempt := 1; attempt <= 200; attempt++ {
					wait := c.wait(attempt)
					if wait < 0 || wait > tc.max {
						f.Errorf("backoff %v max %v jitter %v random %v attempt %d: wait %v out of [0, %v]",
							tc.backoff, tc.max, jitter, r, attempt, wait, tc.max)
						return
					}
				}
			}
		}
	}
}

func (f *BackoffFixture) TestHugeAttemptCountsStayAtTheMaximum() {
	c := newConfig([]Option{Options.Backoff(5 * time.Second), Options.MaxBackoff(time.Minute), Options.Random(func() float64 { return 0.5 })})

	for _, attempt := range []int{63, 64, 65, 1000, math.MaxInt} {
		f.So(c.wait(attempt), should.Equal, time.Minute)
	}
	f.So(c.wait(0), should.Equal, 5*time.Second)
	f.So(c.wait(math.MinInt), should.Equal, 5*time.Second)
}

func (f *BackoffFixture) TestTheShorthandsBuildAPolicy() {
	f.So(newConfig([]Option{Options.Backoff(5 * time.Second), Options.MaxBackoff(time.Minute)}).policy,
		should.Equal, retrypolicy.Exponential(5, 5*time.Second, time.Minute))
	f.So(newConfig([]Option{Options.Backoff(5 * time.Second)}).policy, should.Equal, retrypolicy.Fixed(5, 5*time.Second))
	f.So(newConfig([]Option{Options.MaxBackoff(time.Minute)}).policy, should.Equal, retrypolicy.Exponential(5, time.Second, time.Minute))
	f.So(newConfig([]Option{Options.Policy(retrypolicy.Fixed(3, time.Hour)), Options.Backoff(time.Second)}).policy,
		should.Equal, retrypolicy.Fixed(3, time.Second)) // the policy's attempts, the shorthand's waits
}

func (f *BackoffFixture) TestDoublingSchedule() {
	c := newConfig([]Option{Options.Backoff(time.Second), Options.MaxBackoff(10 * time.Second), Options.Random(func() float64 { return 0.5 })})
	var waits []time.Duration
	for attempt := 1; attempt <= 6; attempt++ {
		waits = append(waits, c.wait(attempt))
	}
	f.So(waits, should.Equal, []time.Duration{
		time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second,
	})
}

func (f *BackoffFixture) TestJitterSpreadsBothWays() {
	jittered := Options.Policy(retrypolicy.Fixed(5, 10*time.Second).WithJitter(0.2))
	lowest := newConfig([]Option{jittered, Options.Random(func() float64 { return 0 })})
	middle := newConfig([]Option{jittered, Options.Random(func() float64 { return 0.5 })})
	highest := newConfig([]Option{jittered, Options.Random(func() float64 { return 1 })}) // out of range: treated as just below 1

	f.So(lowest.wait(1), should.Equal, 8*time.Second)
	f.So(middle.wait(1), should.Equal, 10*time.Second)
	f.So(highest.wait(1), should.BeBetween, 11999*time.Millisecond, 12*time.Second+1)
}

func (f *BackoffFixture) TestJitterNeverExceedsMaxBackoff() {
	c := newConfig([]Option{Options.Policy(retrypolicy.Exponential(5, time.Second, 4*time.Second).WithJitter(1)),
		Options.Random(func() float64 { return 0.99 })})

	f.So(c.wait(3), should.Equal, 4*time.Second)
	f.So(c.wait(2), should.BeLessThanOrEqualTo, 4*time.Second)
}

func (f *BackoffFixture) TestDefaultRandomJitterStaysInBounds() {
	c := newConfig([]Option{Options.Policy(retrypolicy.Exponential(5, time.Second, time.Minute).WithJitter(0.5))})
	for i := 0; i < 20000; i++ {
		attempt := i%10 + 1
		wait := c.wait(attempt)
		base := retrypolicy.Exponential(11, time.Second, time.Minute).Schedule()[attempt-1]
		if wait < base/2 || wait > base+base/2 || wait > time.Minute {
			f.Errorf("attempt %d: wait %v outside ±50%% of %v", attempt, wait, base)
			return
		}
	}
}
