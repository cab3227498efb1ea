package saga

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
)

func TestSagaFixture(t *testing.T) {
	gunit.Run(new(SagaFixture), t)
}

type SagaFixture struct {
	*gunit.Fixture
	log     []string
	monitor *fakeMonitor
}

func (f *SagaFixture) Setup() {
	f.log = nil
	f.monitor = &fakeMonitor{}
}

var errBoom = errors.New("boom")

// steps returns n steps that record what they do; failAt fails the Do of
// that step (1-based, 0 for none), undoFails the Undo of those named.
func (f *SagaFixture) steps(n, failAt int, undoFails ...string) []Step[*order] {
	var steps []Step[*order]
	for i := 1; i <= n; i++ {
		name := fmt.Sprint("s", i)
		steps = append(steps, Step[*order]{
			Name: name,
			Do: func(_ context.Context, o *order) error {
				f.log = append(f.log, "do "+name)
				if i == failAt {
					return errBoom
				}
				o.done++
				return nil
			},
			Undo: func(_ context.Context, o *order) error {
				f.log = append(f.log, "undo "+name)
				for _, failing := range undoFails {
					if failing == name {
						return errBoom
					}
				}
				o.done--
				return nil
			},
		})
	}
	return steps
}

type order struct{ done int }

func (f *SagaFixture) run(steps []Step[*order]) (Result, *order) {
	s, err := New("place-order", steps, Options.Monitor(f.monitor))
	f.So(err, should.BeNil)
	o := &order{}
	return s.Run(context.Background(), o), o
}

func (f *SagaFixture) TestEveryStepRunsInOrder() {
	result, o := f.run(f.steps(3, 0))
	f.So(result.OK(), should.BeTrue)
	f.So(result.Outcome(), should.Equal, Completed)
	f.So(result.Completed, should.Resemble, []string{"s1", "s2", "s3"})
	f.So(f.log, should.Resemble, []string{"do s1", "do s2", "do s3"})
	f.So(o.done, should.Equal, 3)
	f.So(f.monitor.events, should.Resemble, []string{"place-order completed"})
}

func (f *SagaFixture) TestAFailureAtEachStepUndoesExactlyTheCompletedOnesInReverse() {
	for failAt := 1; failAt <= 4; failAt++ {
		f.log = nil
		result, o := f.run(f.steps(4, failAt))
		want := []string{}
		for i := 1; i <= failAt; i++ {
			want = append(want, fmt.Sprint("do s", i))
		}
		var undone []string
		for i := failAt - 1; i >= 1; i-- {
			want = append(want, fmt.Sprint("undo s", i))
			undone = append(undone, fmt.Sprint("s", i))
		}
		f.So(f.log, should.Resemble, want)
		f.So(result.Failed, should.Equal, fmt.Sprint("s", failAt))
		f.So(errors.Is(result.Err, errBoom), should.BeTrue)
		f.So(result.Compensated, should.Resemble, undone)
		f.So(result.Outcome(), should.Equal, Compensated)
		f.So(result.HasUnresolved(), should.BeFalse)
		f.So(o.done, should.Equal, 0)
	}
}

func (f *SagaFixture) TestAFailingUndoIsUnresolvedAndTheOthersStillRun() {
	result, _ := f.run(f.steps(4, 4, "s2"))
	f.So(f.log, should.Resemble, []string{"do s1", "do s2", "do s3", "do s4", "undo s3", "undo s2", "undo s1"})
	f.So(result.HasUnresolved(), should.BeTrue)
	f.So(result.Outcome(), should.Equal, Unresolved)
	f.So(len(result.Unresolved), should.Equal, 1)
	f.So(result.Unresolved[0].Step, should.Equal, "s2")
	f.So(errors.Is(result.Unresolved[0], errBoom), should.BeTrue)
	f.So(result.Compensated, should.Resemble, []string{"s3", "s1"})
	f.So(result.String(), should.ContainSubstring, "NOT undone: s2")
	f.So(f.monitor.events, should.Resemble, []string{"undo failed s2", "place-order unresolved"})
}

func (f *SagaFixture) TestANilUndoIsSkipped() {
	steps := f.steps(3, 3)
	steps[1].Undo = nil
	result, _ := f.run(steps)
	f.So(f.log, should.Resemble, []string{"do s1", "do s2", "do s3", "undo s1"})
	f.So(result.Skipped, should.Resemble, []string{"s2"})
	f.So(result.Outcome(), should.Equal, Compensated)
}

func (f *SagaFixture) TestAPanickingStepFailsAndTheEarlierOnesAreCompensated() {
	steps := f.steps(3, 0)
	steps[2].Do = func(context.Context, *order) error { panic("out of stock") }
	result, o := f.run(steps)
	f.So(result.Failed, should.Equal, "s3")
	f.So(result.Err.Error(), should.ContainSubstring, "panicked: out of stock")
	f.So(f.log, should.Resemble, []string{"do s1", "do s2", "undo s2", "undo s1"})
	f.So(o.done, should.Equal, 0)
}

func (f *SagaFixture) TestAPanickingUndoIsUnresolved() {
	steps := f.steps(3, 3)
	steps[1].Undo = func(context.Context, *order) error { panic(errBoom) }
	result, _ := f.run(steps)
	f.So(result.Unresolved[0].Step, should.Equal, "s2")
	f.So(errors.Is(result.Unresolved[0].Err, errBoom), should.BeTrue)
	f.So(f.log, should.Resemble, []string{"do s1", "do s2", "do s3", "undo s1"})
}

func (f *SagaFixture) TestNewRefusesAnIncompleteDefinition() {
	do := func(context.Context, int) error { return nil }
	for _, c := range []struct {
		name  string
		steps []Step[int]
	}{
		{"", []Step[int]{{Name: "a", Do: do}}},
		{"s", nil},
		{"s", []Step[int]{{Do: do}}},
		{"s", []Step[int]{{Name: "a"}}},
		{"s", []Step[int]{{Name: "a", Do: do}, {Name: "a", Do: do}}},
	} {
		s, err := New(c.name, c.steps)
		f.So(s, should.BeNil)
		f.So(errors.Is(err, ErrInvalidSaga), should.BeTrue)
	}
}

// TestADeadlineStopsAtAStepBoundaryAndCompensates runs on synctest's clock:
// the deadline passes while the second step runs; that step finishes (a
// saga does not interrupt a step), the third does not start, and the two
// completed steps are undone with Run's context.
func TestADeadlineStopsAtAStepBoundaryAndCompensates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var log []string
		record := func(line string) { mu.Lock(); log = append(log, line); mu.Unlock() }
		step := func(name string, took time.Duration) Step[string] {
			return Step[string]{
				Name: name,
				Do:   func(context.Context, string) error { record("do " + name); time.Sleep(took); return nil }, // the bubble's clock
				Undo: func(ctx context.Context, _ string) error {
					record(fmt.Sprintf("undo %s (ctx %v)", name, ctx.Err()))
					return nil
				},
			}
		}
		s, err := New("slow", []Step[string]{step("a", time.Second), step("b", 3*time.Second), step("c", 0)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		result := s.Run(ctx, "order")
		want := "do a|do b|undo b (ctx context deadline exceeded)|undo a (ctx context deadline exceeded)"
		if got := strings.Join(log, "|"); got != want {
			t.Fatalf("ran %s; want %s", got, want)
		}
		if result.Failed != "c" || !errors.Is(result.Err, context.DeadlineExceeded) || result.Outcome() != Compensated {
			t.Fatalf("result %+v; want c not started, the deadline as its error, compensated", result)
		}
	})
}

type fakeMonitor struct{ events []string }

func (m *fakeMonitor) Finished(saga string, outcome Outcome) {
	m.events = append(m.events, saga+" "+outcome.String())
}

func (m *fakeMonitor) UndoFailed(_, step string, _ error) {
	m.events = append(m.events, "undo failed "+step)
}
