package retrypolicy_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging/retrypolicy"
)

func TestDelayFixture(t *testing.T) {
	gunit.Run(new(DelayFixture), t)
}

type DelayFixture struct {
	*gunit.Fixture
}

const maxDuration = time.Duration(math.MaxInt64)

func constant(r float64) func() float64 { return func() float64 { return r } }

// The rule: a wait goes to the broker when threshold > 0, delay > 0 and
// delay >= threshold. The AceMQ family's contract names a 30-row threshold table in the
// contract fixtures without listing its rows; these 30 rows are derived from
// the rule, around every boundary it has.
func (f *DelayFixture) TestThresholdTable() {
	unset := retrypolicy.Policy{}
	from := func(d time.Duration) retrypolicy.Policy { return retrypolicy.Policy{}.WaitInBrokerFrom(d) }
	rows := []struct {
		threshold string
		policy    retrypolicy.Policy
		delay     time.Duration
		inBroker  bool
	}{
		{"default 30s", unset, 0, false},
		{"default 30s", unset, time.Nanosecond, false},
		{"default 30s", unset, s, false},
		{"default 30s", unset, 30*s - time.Nanosecond, false},
		{"default 30s", unset, 30 * s, true},
		{"default 30s", unset, 30*s + time.Nanosecond, true},
		{"default 30s", unset, time.Minute, true},
		{"default 30s", unset, time.Hour, true},
		{"default 30s", unset, -s, false},
		{"default 30s", unset, maxDuration, true},
		{"0 (never)", from(0), 0, false},
		{"0 (never)", from(0), time.Nanosecond, false},
		{"0 (never)", from(0), 30 * s, false},
		{"0 (never)", from(0), time.Hour, false},
		{"0 (never)", from(0), maxDuration, false},
		{"1ns", from(time.Nanosecond), 0, false},
		{"1ns", from(time.Nanosecond), time.Nanosecond, true},
		{"1ns", from(time.Nanosecond), time.Millisecond, true},
		{"1s", from(s), 999 * time.Millisecond, false},
		{"1s", from(s), s, true},
		{"1s", from(s), 1500 * time.Millisecond, true},
		{"1m", from(time.Minute), 59 * s, false},
		{"1m", from(time.Minute), time.Minute, true},
		{"1m", from(time.Minute), 61 * s, true},
		{"-5s (read as 0)", from(-5 * s), time.Hour, false},
		{"1h", from(time.Hour), time.Hour - s, false},
		{"1h", from(time.Hour), time.Hour, true},
		{"1h", from(time.Hour), 2 * time.Hour, true},
		{"30s stated", from(30 * s), 30 * s, true},
		{"30s stated", from(30 * s), 29 * s, false},
	}
	f.So(len(rows), should.Equal, 30)
	for _, row := range rows {
		if row.policy.InBroker(row.delay) != row.inBroker {
			f.Errorf("threshold %s, delay %v: InBroker is %v, want %v", row.threshold, row.delay, !row.inBroker, row.inBroker)
		}
	}
}

func (f *DelayFixture) TestDelayIsTheWaitAfterTheFailedAttempt() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute).WithJitter(0)
	schedule := p.Schedule()
	for attempt := 1; attempt <= len(schedule); attempt++ {
		f.So(p.Delay(attempt, nil), should.Equal, schedule[attempt-1])
	}
	f.So(p.Delay(0, nil), should.Equal, 10*s)
	f.So(p.Delay(-3, nil), should.Equal, 10*s)
	f.So(p.Delay(math.MinInt, nil), should.Equal, 10*s)
	f.So(p.Delay(6, nil), should.Equal, 5*time.Minute) // past the schedule the cap holds
}

func (f *DelayFixture) TestNoOverflowAtAnyAttempt() {
	p := retrypolicy.Exponential(10, s, time.Minute).WaitInBrokerFrom(0)
	for _, attempt := range []int{7, 8, 62, 63, 64, 65, 1 << 30, math.MaxInt} {
		f.So(p.WithJitter(0).Delay(attempt, nil), should.Equal, time.Minute)
		f.So(p.Delay(attempt, constant(0)), should.Equal, 48*s)
	}

	huge := retrypolicy.Exponential(math.MaxInt, time.Nanosecond, maxDuration).WithJitter(0).WaitInBrokerFrom(0)
	f.So(huge.Delay(62, nil), should.Equal, time.Duration(1<<61))
	f.So(huge.Delay(63, nil), should.Equal, time.Duration(1<<62))
	f.So(huge.Delay(64, nil), should.Equal, maxDuration)
	f.So(huge.Delay(1<<30, nil), should.Equal, maxDuration)
	f.So(huge.Delay(math.MaxInt, nil), should.Equal, maxDuration)

	fullJitter := huge.WithJitter(1)
	f.So(fullJitter.Delay(1<<30, constant(math.Nextafter(1, 0))), should.Equal, maxDuration)
	f.So(fullJitter.Delay(1<<30, constant(0)), should.Equal, time.Duration(0))
	f.So(fullJitter.Delay(1<<30, constant(0.5)), should.BeGreaterThan, maxDuration/2)
}

func (f *DelayFixture) TestFixedHasNoJitter() {
	p := retrypolicy.Fixed(5, 10*s)
	for _, r := range []float64{0, 0.25, 0.5, 0.999} {
		for attempt := 1; attempt <= 5; attempt++ {
			f.So(p.Delay(attempt, constant(r)), should.Equal, 10*s)
		}
	}
}

func (f *DelayFixture) TestJitterStaysWithinFactorOver20000Draws() {
	for _, factor := range []float64{0.2, 0.5, 1} {
		p := retrypolicy.Exponential(3, 10*s, 20*s).WithJitter(factor)
		random := rand.New(rand.NewPCG(1, 2))
		low := time.Duration(float64(10*s) * (1 - factor))
		high := time.Duration(float64(10*s) * (1 + factor))
		lowest, highest := maxDuration, time.Duration(0)
		var sum float64
		for range 20_000 {
			d := p.Delay(1, random.Float64)
			lowest, highest = min(lowest, d), max(highest, d)
			sum += float64(d)
		}
		f.So(lowest, should.BeGreaterThanOrEqualTo, low)
		f.So(highest, should.BeLessThanOrEqualTo, high)
		spread := float64(high - low)
		f.So(float64(lowest-low), should.BeLessThan, spread*0.01)   // reaches down
		f.So(float64(high-highest), should.BeLessThan, spread*0.01) // and up: both directions
		f.So(math.Abs(sum/20_000-float64(10*s)), should.BeLessThan, spread*0.02)
	}
}

func (f *DelayFixture) TestJitterWithTheDefaultRandomSourceStaysInBounds() {
	p := retrypolicy.Exponential(3, 10*s, 20*s)
	for range 20_000 {
		d := p.Delay(1, nil)
		if d < 8*s || d > 12*s {
			f.Errorf("default random: %v outside [8s, 12s]", d)
			return
		}
	}
}

func (f *DelayFixture) TestJitterEndsAndOutOfRangeRandoms() {
	p := retrypolicy.Exponential(3, 10*s, 20*s)
	f.So(p.Delay(1, constant(0)), should.Equal, 8*s)
	f.So(p.Delay(1, constant(0.5)), should.Equal, 10*s)
	f.So(p.Delay(1, constant(math.Nextafter(1, 0))), should.BeBetweenOrEqual, 11999*time.Millisecond, 12*s)
	f.So(p.Delay(1, constant(1)), should.BeBetweenOrEqual, 11999*time.Millisecond, 12*s) // read as just below 1
	f.So(p.Delay(1, constant(7)), should.BeBetweenOrEqual, 11999*time.Millisecond, 12*s)
	f.So(p.Delay(1, constant(-1)), should.Equal, 8*s)
	f.So(p.Delay(1, constant(math.NaN())), should.Equal, 8*s)
	f.So(p.Delay(1, constant(math.Inf(-1))), should.Equal, 8*s)
}

func (f *DelayFixture) TestJitterFloorIsZero() {
	p := retrypolicy.Fixed(2, time.Millisecond).WithJitter(1)
	f.So(p.Delay(1, constant(0)), should.Equal, time.Duration(0))
}

func (f *DelayFixture) TestBrokerWaitsAreNeverJittered() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute).WithJitter(1)
	random := rand.New(rand.NewPCG(3, 4))
	jittered := map[time.Duration]bool{}
	for range 20_000 {
		f.So(p.Delay(3, random.Float64), should.Equal, 40*s)
		f.So(p.Delay(5, random.Float64), should.Equal, 160*s)
		jittered[p.Delay(2, random.Float64)] = true // 20s: in the process
	}
	f.So(len(jittered), should.BeGreaterThan, 1000)

	// The same wait is jittered once no wait goes to the broker.
	inProcess := p.WaitInBrokerFrom(0)
	f.So(inProcess.Delay(3, constant(0)), should.Equal, time.Duration(0))
	f.So(inProcess.Delay(3, constant(0.75)), should.Equal, 60*s)
}

func (f *DelayFixture) TestJitterNeverMovesAWaitIntoTheBroker() {
	p := retrypolicy.Fixed(3, 29*s).WithJitter(0.5) // in the process, jittered up to 43.5 s
	d := p.Decide(1, time.Time{}, time.Now())
	f.So(d.InBroker, should.BeFalse)
	f.So(p.Delay(1, constant(0.99)), should.BeGreaterThan, 30*s)
	f.So(p.Rungs("orders"), should.BeEmpty)
}
