package retrypolicy_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging/retrypolicy"
)

func TestPolicyFixture(t *testing.T) {
	gunit.Run(new(PolicyFixture), t)
}

type PolicyFixture struct {
	*gunit.Fixture
}

const s = time.Second

func (f *PolicyFixture) TestSchedulesOfTheDigest() {
	cases := []struct {
		name   string
		policy retrypolicy.Policy
		want   []time.Duration
	}{
		{"ExponentialRetry(4,1s,3s)", retrypolicy.Exponential(4, s, 3*s), []time.Duration{s, 2 * s, 3 * s}},
		{"ExponentialRetry(6,10s,5m)", retrypolicy.Exponential(6, 10*s, 5*time.Minute), []time.Duration{10 * s, 20 * s, 40 * s, 80 * s, 160 * s}},
		{"doubling, not x5", retrypolicy.Exponential(10, s, time.Hour), []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 32 * s, 64 * s, 128 * s, 256 * s}},
		{"capped and repeated", retrypolicy.Exponential(6, s, 3*s), []time.Duration{s, 2 * s, 3 * s, 3 * s, 3 * s}},
		{"initial equals maximum", retrypolicy.Exponential(3, 5*s, 5*s), []time.Duration{5 * s, 5 * s}},
		{"FixedRetry(3,10s)", retrypolicy.Fixed(3, 10*s), []time.Duration{10 * s, 10 * s}},
		{"FixedRetry(2,0)", retrypolicy.Fixed(2, 0), []time.Duration{0}},
		{"FixedRetry(1,10s)", retrypolicy.Fixed(1, 10*s), nil},
		{"NoRetry()", retrypolicy.None(), nil},
		{"zero Policy", retrypolicy.Policy{}, nil},
	}
	for _, tc := range cases {
		f.So(tc.policy.Schedule(), should.Equal, tc.want)
		f.So(tc.policy.Err(), should.BeNil)
	}
}

func (f *PolicyFixture) TestMaxAttemptsCountsTheFirstDelivery() {
	f.So(retrypolicy.None().MaxAttempts(), should.Equal, 1)
	f.So(retrypolicy.Fixed(3, s).MaxAttempts(), should.Equal, 3)
	f.So(len(retrypolicy.Fixed(3, s).Schedule()), should.Equal, 2)
	f.So(retrypolicy.Exponential(6, s, time.Minute).MaxAttempts(), should.Equal, 6)
	f.So(len(retrypolicy.Exponential(6, s, time.Minute).Schedule()), should.Equal, 5)
	f.So(retrypolicy.Policy{}.MaxAttempts(), should.Equal, 0)
}

func (f *PolicyFixture) TestJitterDefaults() {
	f.So(retrypolicy.Exponential(3, s, time.Minute).Jitter(), should.Equal, 0.2)
	f.So(retrypolicy.Exponential(3, s, time.Minute).Jitter(), should.Equal, retrypolicy.DefaultExponentialJitter)
	f.So(retrypolicy.Fixed(3, s).Jitter(), should.Equal, 0.0)
	f.So(retrypolicy.None().Jitter(), should.Equal, 0.0)
	f.So(retrypolicy.Policy{}.Jitter(), should.Equal, 0.0)
	f.So(retrypolicy.Fixed(3, s).WithJitter(0.5).Jitter(), should.Equal, 0.5)
	f.So(retrypolicy.Exponential(3, s, time.Minute).WithJitter(0).Jitter(), should.Equal, 0.0)
}

func (f *PolicyFixture) TestNoDefaultMaximumAge() {
	f.So(retrypolicy.Exponential(3, s, time.Minute).MaxAge(), should.Equal, time.Duration(0))
	f.So(retrypolicy.Fixed(3, s).MaxAge(), should.Equal, time.Duration(0))
	f.So(retrypolicy.None().MaxAge(), should.Equal, time.Duration(0))
	f.So(retrypolicy.Fixed(3, s).GiveUpAfter(time.Hour).MaxAge(), should.Equal, time.Hour)
	f.So(retrypolicy.Fixed(3, s).GiveUpAfter(time.Hour).GiveUpAfter(0).MaxAge(), should.Equal, time.Duration(0))
}

func (f *PolicyFixture) TestBrokerWaitThresholdDefaultsTo30sUntilStated() {
	f.So(retrypolicy.DefaultBrokerWaitThreshold, should.Equal, 30*s)
	f.So(retrypolicy.Policy{}.BrokerWaitThreshold(), should.Equal, 30*s)
	f.So(retrypolicy.None().BrokerWaitThreshold(), should.Equal, 30*s)
	f.So(retrypolicy.Fixed(3, s).BrokerWaitThreshold(), should.Equal, 30*s)
	f.So(retrypolicy.Exponential(3, s, time.Minute).BrokerWaitThreshold(), should.Equal, 30*s)
	f.So(retrypolicy.Fixed(3, s).WaitInBrokerFrom(0).BrokerWaitThreshold(), should.Equal, time.Duration(0))
	f.So(retrypolicy.Fixed(3, s).WaitInBrokerFrom(time.Minute).BrokerWaitThreshold(), should.Equal, time.Minute)
	f.So(retrypolicy.Fixed(3, s).WaitInBrokerFrom(time.Minute).WaitInBrokerFrom(0).BrokerWaitThreshold(), should.Equal, time.Duration(0))
}

func (f *PolicyFixture) TestTheZeroPolicy() {
	var zero retrypolicy.Policy
	f.So(zero.IsZero(), should.BeTrue)
	f.So(zero.Err(), should.BeNil)
	f.So(zero.Delay(1, nil), should.Equal, time.Duration(0))
	f.So(zero.Delay(1<<30, nil), should.Equal, time.Duration(0))
	f.So(zero.Rungs("orders"), should.BeEmpty)

	f.So(retrypolicy.None().IsZero(), should.BeFalse)
	f.So(zero.WaitInBrokerFrom(0).IsZero(), should.BeFalse)
	f.So(zero.GiveUpAfter(time.Hour).IsZero(), should.BeFalse)
	f.So(zero.WithJitter(0).IsZero(), should.BeTrue) // jitter 0 is what it had
}

func (f *PolicyFixture) TestMethodsReturnCopiesAndLeaveTheReceiverAlone() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute)
	_ = p.WithJitter(0.9)
	_ = p.GiveUpAfter(time.Hour)
	_ = p.WaitInBrokerFrom(0)
	_ = p.WithJitter(7) // invalid: recorded on the copy only

	f.So(p.Jitter(), should.Equal, 0.2)
	f.So(p.MaxAge(), should.Equal, time.Duration(0))
	f.So(p.BrokerWaitThreshold(), should.Equal, 30*s)
	f.So(p.Err(), should.BeNil)
	f.So(p, should.Equal, retrypolicy.Exponential(6, 10*s, 5*time.Minute))
}

func (f *PolicyFixture) TestScheduleIsTheCallersToChange() {
	p := retrypolicy.Fixed(3, 10*s)
	schedule := p.Schedule()
	schedule[0] = time.Hour
	f.So(p.Schedule(), should.Equal, []time.Duration{10 * s, 10 * s})
}

func (f *PolicyFixture) TestScheduleIsCutAtTheLimitWithoutLosingAValue() {
	fixed := retrypolicy.Fixed(1<<40, s).Schedule()
	f.So(len(fixed), should.Equal, retrypolicy.ScheduleLimit)
	f.So(fixed[len(fixed)-1], should.Equal, s)

	exponential := retrypolicy.Exponential(math.MaxInt, time.Nanosecond, time.Duration(math.MaxInt64)).Schedule()
	f.So(len(exponential), should.Equal, retrypolicy.ScheduleLimit)
	f.So(exponential[62], should.Equal, time.Duration(1<<62))
	f.So(exponential[63], should.Equal, time.Duration(math.MaxInt64))
	f.So(exponential[len(exponential)-1], should.Equal, time.Duration(math.MaxInt64))

	f.So(len(retrypolicy.Fixed(retrypolicy.ScheduleLimit+1, s).Schedule()), should.Equal, retrypolicy.ScheduleLimit)
	f.So(len(retrypolicy.Fixed(retrypolicy.ScheduleLimit, s).Schedule()), should.Equal, retrypolicy.ScheduleLimit-1)
}

func (f *PolicyFixture) TestInvalidInputsAreRecordedAndReplaced() {
	cases := []struct {
		name        string
		policy      retrypolicy.Policy
		mentions    string
		attempts    int
		schedule    []time.Duration
		jitter      float64
		maxAge      time.Duration
		threshold   time.Duration
		errorsCount int
	}{
		{"Fixed attempts 0", retrypolicy.Fixed(0, s), "attempts is 0", 1, nil, 0, 0, 30 * s, 1},
		{"Fixed attempts -5", retrypolicy.Fixed(-5, s), "attempts is -5", 1, nil, 0, 0, 30 * s, 1},
		{"Fixed negative delay", retrypolicy.Fixed(3, -s), "the delay -1s is negative", 3, []time.Duration{0, 0}, 0, 0, 30 * s, 1},
		{"Exponential attempts 0", retrypolicy.Exponential(0, s, 2*s), "attempts is 0", 1, nil, 0.2, 0, 30 * s, 1},
		{"Exponential negative initial", retrypolicy.Exponential(3, -s, 2*s), "initial delay -1s is negative", 3, []time.Duration{0, 0}, 0.2, 0, 30 * s, 1},
		{"Exponential maximum below initial", retrypolicy.Exponential(4, 10*s, s), "maximum delay 1s is below the initial delay 10s", 4, []time.Duration{10 * s, 10 * s, 10 * s}, 0.2, 0, 30 * s, 1},
		{"Exponential negative maximum", retrypolicy.Exponential(3, s, -s), "maximum delay -1s is negative", 3, []time.Duration{s, s}, 0.2, 0, 30 * s, 2},
		{"jitter below 0", retrypolicy.Fixed(2, s).WithJitter(-0.1), "factor -0.1 is below 0", 2, []time.Duration{s}, 0, 0, 30 * s, 1},
		{"jitter above 1", retrypolicy.Fixed(2, s).WithJitter(1.5), "factor 1.5 is above 1", 2, []time.Duration{s}, 1, 0, 30 * s, 1},
		{"jitter NaN", retrypolicy.Fixed(2, s).WithJitter(math.NaN()), "factor is NaN", 2, []time.Duration{s}, 0, 0, 30 * s, 1},
		{"jitter +Inf", retrypolicy.Fixed(2, s).WithJitter(math.Inf(1)), "above 1", 2, []time.Duration{s}, 1, 0, 30 * s, 1},
		{"negative age", retrypolicy.Fixed(2, s).GiveUpAfter(-time.Hour), "age -1h0m0s is negative", 2, []time.Duration{s}, 0, 0, 30 * s, 1},
		{"negative threshold", retrypolicy.Fixed(2, s).WaitInBrokerFrom(-s), "threshold -1s is negative", 2, []time.Duration{s}, 0, 0, 0, 1},
		{"two at once", retrypolicy.Fixed(-1, s).WithJitter(2), "attempts is -1", 1, nil, 1, 0, 30 * s, 2},
	}
	for _, tc := range cases {
		err := tc.policy.Err()
		f.So(err, should.NotBeNil)
		if err == nil {
			continue
		}
		f.So(errors.Is(err, retrypolicy.ErrInvalid), should.BeTrue)
		f.So(err.Error(), should.ContainSubstring, tc.mentions)
		f.So(err.Error(), should.StartWith, "retrypolicy: invalid policy: ")
		f.So(strings.Count(err.Error(), "retrypolicy: invalid policy: "), should.Equal, tc.errorsCount)
		f.So(tc.policy.MaxAttempts(), should.Equal, tc.attempts)
		f.So(tc.policy.Schedule(), should.Equal, tc.schedule)
		f.So(tc.policy.Jitter(), should.Equal, tc.jitter)
		f.So(tc.policy.MaxAge(), should.Equal, tc.maxAge)
		f.So(tc.policy.BrokerWaitThreshold(), should.Equal, tc.threshold)
	}
}

func (f *PolicyFixture) TestValidEdgesAreNotErrors() {
	for _, p := range []retrypolicy.Policy{
		retrypolicy.Fixed(1, 0),
		retrypolicy.Fixed(math.MaxInt, time.Duration(math.MaxInt64)),
		retrypolicy.Exponential(1, 0, 0),
		retrypolicy.Exponential(2, s, s),
		retrypolicy.None().WithJitter(0).WithJitter(1).GiveUpAfter(0).WaitInBrokerFrom(0),
	} {
		f.So(p.Err(), should.BeNil)
	}
}

func (f *PolicyFixture) TestString() {
	f.So(retrypolicy.Exponential(6, 10*s, 5*time.Minute).String(), should.Equal,
		"exponential: 6 attempts, 10s doubling to 5m0s, jitter 0.2, no age limit, broker waits from 30s")
	f.So(retrypolicy.Fixed(1, s).GiveUpAfter(time.Hour).WaitInBrokerFrom(0).String(), should.Equal,
		"fixed: 1 attempt, 1s apart, jitter 0, give up after 1h0m0s, no broker waits")
	f.So(retrypolicy.None().String(), should.Equal, "none: 1 attempt, jitter 0, no age limit, broker waits from 30s")
	f.So(retrypolicy.Policy{}.String(), should.Equal, "unset: no attempt limit, no wait, jitter 0, no age limit, broker waits from 30s")
}

func TestAJitteredExponentialWaitNeverExceedsTheMaximum(t *testing.T) {
	policy := retrypolicy.Exponential(5, time.Second, 4*time.Second).WithJitter(0.5)
	high := func() float64 { return 0.999 }
	if got := policy.Delay(3, high); got != 4*time.Second {
		t.Fatalf("the third wait, jittered up from its 4s cap, is %s; want 4s", got)
	}
	if got := policy.Delay(1, high); got <= time.Second || got > 1500*time.Millisecond {
		t.Fatalf("the first wait jittered up is %s; want just under 1.5s", got)
	}
}
