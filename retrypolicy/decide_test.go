package retrypolicy_test

import (
	"math"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging/retrypolicy"
)

func TestDecideFixture(t *testing.T) {
	gunit.Run(new(DecideFixture), t)
}

type DecideFixture struct {
	*gunit.Fixture
	now time.Time
}

func (f *DecideFixture) Setup() {
	f.now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
}

func retry(delay time.Duration, inBroker bool) retrypolicy.Decision {
	return retrypolicy.Decision{Retry: true, Delay: delay, InBroker: inBroker}
}

func giveUp(reason string) retrypolicy.Decision {
	return retrypolicy.Decision{Reason: reason}
}

func (f *DecideFixture) TestFixedRetriesUntilTheAttemptsAreSpent() {
	p := retrypolicy.Fixed(3, 10*s)
	seen := f.now.Add(-time.Minute)

	f.So(p.Decide(1, seen, f.now), should.Equal, retry(10*s, false))
	f.So(p.Decide(2, seen, f.now), should.Equal, retry(10*s, false))
	f.So(p.Decide(3, seen, f.now), should.Equal, giveUp("exhausted 3 attempts"))
	f.So(p.Decide(4, seen, f.now), should.Equal, giveUp("exhausted 3 attempts"))
	f.So(p.Decide(math.MaxInt, seen, f.now), should.Equal, giveUp("exhausted 3 attempts"))
}

func (f *DecideFixture) TestOneAttemptIsSingular() {
	f.So(retrypolicy.None().Decide(1, f.now, f.now), should.Equal, giveUp("exhausted 1 attempt"))
	f.So(retrypolicy.Fixed(1, s).Decide(1, f.now, f.now), should.Equal, giveUp("exhausted 1 attempt"))
	f.So(retrypolicy.Exponential(1, s, s).Decide(1, f.now, f.now), should.Equal, giveUp("exhausted 1 attempt"))
	f.So(retrypolicy.Fixed(2, s).Decide(2, f.now, f.now), should.Equal, giveUp("exhausted 2 attempts"))
}

func (f *DecideFixture) TestAnAttemptBelowOneReadsAsOne() {
	p := retrypolicy.Fixed(2, s)
	f.So(p.Decide(0, f.now, f.now), should.Equal, retry(s, false))
	f.So(p.Decide(-7, f.now, f.now), should.Equal, retry(s, false))
	f.So(p.Decide(math.MinInt, f.now, f.now), should.Equal, retry(s, false))
	f.So(retrypolicy.None().Decide(0, f.now, f.now), should.Equal, giveUp("exhausted 1 attempt"))
}

func (f *DecideFixture) TestTheDigestsPolicyGoesToTheBrokerFrom40s() {
	p := retrypolicy.Exponential(6, 10*s, 5*time.Minute)
	want := []retrypolicy.Decision{
		retry(10*s, false),
		retry(20*s, false),
		retry(40*s, true),
		retry(80*s, true),
		retry(160*s, true),
		giveUp("exhausted 6 attempts"),
	}
	for i, w := range want {
		f.So(p.Decide(i+1, f.now, f.now), should.Equal, w)
	}
}

func (f *DecideFixture) TestMaximumAge() {
	p := retrypolicy.Exponential(10, s, time.Minute).GiveUpAfter(time.Hour)

	f.So(p.Decide(1, f.now.Add(-time.Hour-time.Nanosecond), f.now), should.Equal,
		giveUp("exceeded the maximum message age of 1h0m0s"))
	f.So(p.Decide(1, f.now.Add(-48*time.Hour), f.now), should.Equal,
		giveUp("exceeded the maximum message age of 1h0m0s"))
	f.So(p.Decide(1, f.now.Add(-time.Hour), f.now), should.Equal, retry(s, false)) // exactly the age: not exceeded
	f.So(p.Decide(1, f.now.Add(-time.Minute), f.now), should.Equal, retry(s, false))
}

func (f *DecideFixture) TestAnUnknownAgeNeverExceeds() {
	p := retrypolicy.Fixed(3, s).GiveUpAfter(time.Minute)

	f.So(p.Decide(1, time.Time{}, f.now), should.Equal, retry(s, false))
	f.So(p.Decide(1, f.now.Add(time.Hour), f.now), should.Equal, retry(s, false)) // first seen in the future: clock skew
}

func (f *DecideFixture) TestTheAttemptLimitIsCheckedFirst() {
	p := retrypolicy.Fixed(2, s).GiveUpAfter(time.Minute)
	f.So(p.Decide(2, f.now.Add(-time.Hour), f.now), should.Equal, giveUp("exhausted 2 attempts"))
}

func (f *DecideFixture) TestNoAgeLimitByDefault() {
	p := retrypolicy.Fixed(3, s)
	f.So(p.Decide(1, time.Unix(0, 0), f.now), should.Equal, retry(s, false))
	f.So(p.Decide(1, time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC), f.now), should.Equal, retry(s, false))
}

func (f *DecideFixture) TestTheZeroPolicyRetriesAtOnceWithoutLimit() {
	var zero retrypolicy.Policy
	f.So(zero.Decide(1, f.now, f.now), should.Equal, retry(0, false))
	f.So(zero.Decide(1<<30, f.now, f.now), should.Equal, retry(0, false))
	f.So(zero.Decide(math.MaxInt, f.now, f.now), should.Equal, retry(0, false))

	aged := zero.GiveUpAfter(time.Hour)
	f.So(aged.Decide(1<<30, f.now.Add(-2*time.Hour), f.now), should.Equal,
		giveUp("exceeded the maximum message age of 1h0m0s"))
}

func (f *DecideFixture) TestAnInvalidPolicyDecidesAsItsReplacements() {
	p := retrypolicy.Fixed(0, s) // read as 1 attempt
	f.So(p.Err(), should.NotBeNil)
	f.So(p.Decide(1, f.now, f.now), should.Equal, giveUp("exhausted 1 attempt"))
}
