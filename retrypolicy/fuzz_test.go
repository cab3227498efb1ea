package retrypolicy_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/warrenmq/messaging/retrypolicy"
)

// FuzzPolicy builds a policy from arbitrary constructor and method inputs and
// checks that nothing panics, invalid inputs are reported, and every wait
// stays within [0, (1+jitter)*cap], cap being the longest scheduled wait.
func FuzzPolicy(f *testing.F) {
	f.Add(uint8(2), 6, int64(10*time.Second), int64(5*time.Minute), 0.2, int64(30*time.Second), int64(0), 3, 0.5, false)
	f.Add(uint8(2), 4, int64(time.Second), int64(3*time.Second), 1.0, int64(0), int64(time.Hour), 1<<30, 0.999, true)
	f.Add(uint8(1), 3, int64(10*time.Second), int64(0), 0.0, int64(-1), int64(-1), -5, -1.0, true)
	f.Add(uint8(2), math.MaxInt, int64(1), int64(math.MaxInt64), 1.0, int64(1), int64(1), math.MaxInt, 0.999999, true)
	f.Add(uint8(2), -1, int64(-5), int64(-10), math.NaN(), int64(math.MinInt64), int64(math.MinInt64), math.MinInt, math.NaN(), true)
	f.Add(uint8(1), 1<<40, int64(math.MaxInt64), int64(0), math.Inf(1), int64(math.MaxInt64), int64(math.MaxInt64), 64, math.Inf(1), true)
	f.Add(uint8(0), 0, int64(0), int64(0), 0.0, int64(0), int64(0), 0, 0.0, false)
	f.Add(uint8(3), 0, int64(0), int64(0), 0.5, int64(500*time.Millisecond), int64(0), 2, 0.25, true)

	f.Fuzz(func(t *testing.T, which uint8, attempts int, initial, maximum int64, jitter float64, threshold, maxAge int64, attempt int, r float64, chain bool) {
		var p retrypolicy.Policy
		valid := true
		capOf := time.Duration(0)
		in, mx := time.Duration(initial), time.Duration(maximum)
		switch which % 4 {
		case 0:
			p = retrypolicy.None()
		case 1:
			p = retrypolicy.Fixed(attempts, in)
			valid = attempts >= 1 && in >= 0
			capOf = max(in, 0)
		case 2:
			p = retrypolicy.Exponential(attempts, in, mx)
			valid = attempts >= 1 && in >= 0 && mx >= in
			capOf = max(in, mx, 0)
		case 3: // the zero Policy
		}
		if chain {
			p = p.WithJitter(jitter).WaitInBrokerFrom(time.Duration(threshold)).GiveUpAfter(time.Duration(maxAge))
			valid = valid && jitter >= 0 && jitter <= 1 && threshold >= 0 && maxAge >= 0
		}
		if got := p.Err(); (got == nil) != valid {
			t.Fatalf("Err() = %v, want an error: %v", got, !valid)
		}
		if err := p.Err(); err != nil && !errors.Is(err, retrypolicy.ErrInvalid) {
			t.Fatalf("Err() = %v does not wrap ErrInvalid", err)
		}
		if j := p.Jitter(); j < 0 || j > 1 || math.IsNaN(j) {
			t.Fatalf("Jitter() = %v, outside 0..1", j)
		}
		_ = p.String()

		schedule := p.Schedule()
		if len(schedule) > retrypolicy.ScheduleLimit {
			t.Fatalf("schedule of %d entries, above the limit", len(schedule))
		}
		for i, d := range schedule {
			if d < 0 || d > capOf {
				t.Fatalf("schedule[%d] = %v outside [0, %v]", i, d, capOf)
			}
			if i > 0 && d < schedule[i-1] {
				t.Fatalf("schedule shrinks at %d: %v after %v", i, d, schedule[i-1])
			}
		}

		random := func() float64 { return r }
		delay := p.Delay(attempt, random)
		upper := float64(capOf) * (1 + p.Jitter())
		if delay < 0 || float64(delay) > upper*(1+1e-12)+1 {
			t.Fatalf("Delay(%d) = %v outside [0, %v] (cap %v, jitter %v)", attempt, delay, time.Duration(min(upper, math.MaxInt64)), capOf, p.Jitter())
		}
		scheduled := p.WithJitter(0).Delay(attempt, random)
		if p.InBroker(scheduled) && delay != scheduled {
			t.Fatalf("a broker wait was jittered: %v, scheduled %v", delay, scheduled)
		}

		decision := p.Decide(attempt, time.Unix(0, maxAge), time.Unix(0, threshold))
		if decision.Retry == (decision.Reason != "") {
			t.Fatalf("decision %+v: retry and reason disagree", decision)
		}
		if decision.Retry && (decision.Delay != scheduled || decision.InBroker != p.InBroker(scheduled)) {
			t.Fatalf("decision %+v, scheduled %v", decision, scheduled)
		}

		rungs := p.Rungs("q")
		names := map[string]bool{}
		for i, rung := range rungs {
			if names[rung.Name] || rung.TTL < time.Second || rung.TTL%time.Second != 0 || (i > 0 && rung.TTL <= rungs[i-1].TTL) {
				t.Fatalf("ladder %+v is not distinct whole seconds in order", rungs)
			}
			names[rung.Name] = true
			if len(rung.Arguments()) != 3 {
				t.Fatalf("rung %+v has arguments %v", rung, rung.Arguments())
			}
		}
		got, ok := p.RungFor("q", delay)
		if ok != (len(rungs) > 0) || (ok && !names[got.Name]) {
			t.Fatalf("RungFor(%v) = %+v, %v with ladder %+v", delay, got, ok, rungs)
		}
	})
}
