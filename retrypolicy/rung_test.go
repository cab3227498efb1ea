package retrypolicy_test

import (
	"math"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging/retrypolicy"
)

func TestRungFixture(t *testing.T) {
	gunit.Run(new(RungFixture), t)
}

type RungFixture struct {
	*gunit.Fixture
}

func rung(name string, ttl time.Duration) retrypolicy.Rung {
	return retrypolicy.Rung{Name: name, Source: "orders", TTL: ttl}
}

func (f *RungFixture) TestRungNames() {
	cases := []struct {
		delay time.Duration
		want  string
	}{
		{0, "orders.retry.0s"},
		{-s, "orders.retry.0s"},
		{time.Nanosecond, "orders.retry.0s"},
		{500 * time.Millisecond, "orders.retry.0s"}, // Java writes 500ms: a recorded disagreement
		{999 * time.Millisecond, "orders.retry.0s"},
		{s, "orders.retry.1s"},
		{1500 * time.Millisecond, "orders.retry.1s"},
		{30 * s, "orders.retry.30s"},
		{30*s + 500*time.Millisecond, "orders.retry.30s"},
		{40 * s, "orders.retry.40s"},
		{59 * s, "orders.retry.59s"},
		{60 * s, "orders.retry.1m"},
		{80 * s, "orders.retry.80s"}, // not 1m20s
		{90 * s, "orders.retry.90s"},
		{120 * s, "orders.retry.2m"},
		{160 * s, "orders.retry.160s"},
		{5 * time.Minute, "orders.retry.5m"},
		{90 * time.Minute, "orders.retry.90m"},
		{time.Hour, "orders.retry.1h"},
		{time.Hour + s, "orders.retry.3601s"},
		{2 * time.Hour, "orders.retry.2h"},
		{24 * time.Hour, "orders.retry.24h"},
		{maxDuration, "orders.retry.9223372036s"},
	}
	for _, tc := range cases {
		f.So(retrypolicy.RungName("orders", tc.delay), should.Equal, tc.want)
	}
}

func (f *RungFixture) TestTheDigestsLadder() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute)

	f.So(p.Rungs("orders"), should.Equal, []retrypolicy.Rung{
		rung("orders.retry.40s", 40*s),
		rung("orders.retry.80s", 80*s),
		rung("orders.retry.160s", 160*s),
	})
}

func (f *RungFixture) TestAThresholdOfZeroPutsNothingInTheBroker() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute).WaitInBrokerFrom(0)

	f.So(p.Rungs("orders"), should.BeEmpty)
	for attempt := 1; attempt < 6; attempt++ {
		f.So(p.Decide(attempt, time.Time{}, time.Now()).InBroker, should.BeFalse)
	}
	r, ok := p.RungFor("orders", time.Hour)
	f.So(ok, should.BeFalse)
	f.So(r, should.Equal, retrypolicy.Rung{})
}

func (f *RungFixture) TestNoLadderWhenEveryWaitIsShort() {
	f.So(retrypolicy.Exponential(4, s, 3*s).Rungs("orders"), should.BeEmpty)
	f.So(retrypolicy.Fixed(2, 0).WaitInBrokerFrom(time.Nanosecond).Rungs("orders"), should.BeEmpty) // a zero wait never goes to the broker
	f.So(retrypolicy.None().Rungs("orders"), should.BeEmpty)
	f.So(retrypolicy.Policy{}.Rungs("orders"), should.BeEmpty)
}

func (f *RungFixture) TestDuplicateNamesAreRemoved() {
	f.So(retrypolicy.Fixed(5, 45*s).Rungs("orders"), should.Equal, []retrypolicy.Rung{rung("orders.retry.45s", 45*s)})
	f.So(retrypolicy.Exponential(8, 30*s, 2*time.Minute).Rungs("orders"), should.Equal, []retrypolicy.Rung{
		rung("orders.retry.30s", 30*s),
		rung("orders.retry.1m", time.Minute),
		rung("orders.retry.2m", 2*time.Minute),
	})
	// 30.2 s and 30.7 s both round up to 31 s: one rung.
	f.So(retrypolicy.Exponential(4, 15100*time.Millisecond, 30700*time.Millisecond).Rungs("orders"), should.Equal,
		[]retrypolicy.Rung{rung("orders.retry.31s", 31*s)})
}

func (f *RungFixture) TestTwoTTLsNeverShareAName() {
	// 30 s and 30.5 s both give .retry.30s under the naming rule alone; the
	// ladder holds 30.5 s for 31 s instead.
	p := retrypolicy.Exponential(4, 15*s, 30500*time.Millisecond)
	f.So(p.Schedule(), should.Equal, []time.Duration{15 * s, 30 * s, 30500 * time.Millisecond})

	f.So(p.Rungs("orders"), should.Equal, []retrypolicy.Rung{
		rung("orders.retry.30s", 30*s),
		rung("orders.retry.31s", 31*s),
	})
	r, _ := p.RungFor("orders", 30500*time.Millisecond)
	f.So(r, should.Equal, rung("orders.retry.31s", 31*s))
}

func (f *RungFixture) TestSubSecondBrokerWaitsUseTheOneSecondRung() {
	p := retrypolicy.Fixed(3, 500*time.Millisecond).WaitInBrokerFrom(100 * time.Millisecond)

	f.So(p.Rungs("orders"), should.Equal, []retrypolicy.Rung{rung("orders.retry.1s", s)})
	f.So(p.Delay(1, constant(0)), should.Equal, 500*time.Millisecond) // the scheduled wait, unjittered
}

func (f *RungFixture) TestEveryRungIsWholeSecondsAndNoShorterThanItsWaits() {
	policies := []retrypolicy.Policy{
		retrypolicy.Exponential(20, 1300*time.Millisecond, time.Hour).WaitInBrokerFrom(time.Millisecond),
		retrypolicy.Exponential(12, 7*time.Millisecond, 2*time.Minute).WaitInBrokerFrom(time.Nanosecond),
		retrypolicy.Fixed(4, 90500*time.Millisecond),
		retrypolicy.Exponential(math.MaxInt, time.Nanosecond, maxDuration).WaitInBrokerFrom(time.Nanosecond),
	}
	for _, p := range policies {
		rungs := p.Rungs("q")
		names := map[string]bool{}
		for i, r := range rungs {
			f.So(names[r.Name], should.BeFalse)
			names[r.Name] = true
			f.So(r.TTL%s, should.Equal, time.Duration(0))
			f.So(r.TTL, should.BeGreaterThanOrEqualTo, s)
			f.So(r.Name, should.Equal, retrypolicy.RungName("q", r.TTL))
			f.So(r.Source, should.Equal, "q")
			if i > 0 {
				f.So(r.TTL, should.BeGreaterThan, rungs[i-1].TTL)
			}
		}
		for _, delay := range p.Schedule() {
			if !p.InBroker(delay) {
				continue
			}
			r, ok := p.RungFor("q", delay)
			f.So(ok, should.BeTrue)
			f.So(names[r.Name], should.BeTrue)
			if delay <= maxDuration-s {
				f.So(r.TTL, should.BeGreaterThanOrEqualTo, delay)
				f.So(r.TTL-delay, should.BeLessThan, s)
			}
		}
	}
}

func (f *RungFixture) TestTheLongestWaitRoundsDownRatherThanOverflow() {
	p := retrypolicy.Fixed(2, maxDuration)
	rungs := p.Rungs("orders")
	f.So(len(rungs), should.Equal, 1)
	if len(rungs) == 1 {
		f.So(rungs[0].TTL, should.Equal, 9223372036*s)
		f.So(rungs[0].Name, should.Equal, "orders.retry.9223372036s")
		f.So(rungs[0].Arguments()["x-message-ttl"], should.Equal, int64(9223372036000))
	}
}

func (f *RungFixture) TestRungForPicksTheSmallestRungAtLeastTheDelayElseTheLongest() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute)
	cases := []struct {
		delay time.Duration
		want  string
	}{
		{0, "orders.retry.40s"},
		{10 * s, "orders.retry.40s"},
		{39 * s, "orders.retry.40s"},
		{40 * s, "orders.retry.40s"},
		{40*s + time.Nanosecond, "orders.retry.80s"},
		{41 * s, "orders.retry.80s"},
		{80 * s, "orders.retry.80s"},
		{100 * s, "orders.retry.160s"},
		{160 * s, "orders.retry.160s"},
		{161 * s, "orders.retry.160s"},
		{time.Hour, "orders.retry.160s"},
		{maxDuration, "orders.retry.160s"},
	}
	for _, tc := range cases {
		r, ok := p.RungFor("orders", tc.delay)
		f.So(ok, should.BeTrue)
		f.So(r.Name, should.Equal, tc.want)
	}
}

func (f *RungFixture) TestRungArgumentsAreExactlyThree() {
	args := retrypolicy.RungArguments("orders", 40*s)

	f.So(args, should.Equal, map[string]any{
		"x-message-ttl":             int64(40000),
		"x-dead-letter-exchange":    "acemq.retry",
		"x-dead-letter-routing-key": "orders",
	})
	f.So(len(args), should.Equal, 3)
	_, isInt64 := args["x-message-ttl"].(int64)
	f.So(isInt64, should.BeTrue)
	f.So(args, should.NotContainKey, "x-queue-type")
	f.So(retrypolicy.RetryExchange, should.Equal, "acemq.retry")
}

func (f *RungFixture) TestEachLadderRungCarriesItsArguments() {
	for _, r := range retrypolicy.Exponential(6, 10*s, 5*time.Minute).Rungs("orders") {
		f.So(r.Arguments(), should.Equal, map[string]any{
			"x-message-ttl":             r.TTL.Milliseconds(),
			"x-dead-letter-exchange":    "acemq.retry",
			"x-dead-letter-routing-key": "orders",
		})
	}
	f.So(rung("orders.retry.80s", 80*s).Arguments()["x-message-ttl"], should.Equal, int64(80000))
}

func (f *RungFixture) TestArgumentsAreAFreshMapEachTime() {
	r := rung("orders.retry.40s", 40*s)
	r.Arguments()["x-queue-type"] = "quorum"
	f.So(len(r.Arguments()), should.Equal, 3)
}
