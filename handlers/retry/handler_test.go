package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

func TestHandlerFixture(t *testing.T) {
	gunit.Run(new(HandlerFixture), t)
}

type HandlerFixture struct {
	*gunit.Fixture

	inner    *fakeHandler
	monitor  *fakeMonitor
	logs     *bytes.Buffer
	options  []Option
	cancel   context.CancelFunc
	messages []any
	listener *fakeListener
	// deliveries, when set, travel beside the messages in the context, as
	// the streaming runtime puts them there.
	deliveries []messaging.Delivery
	// cancelAfter, when positive, cancels the context that long after
	// Handle began, on the bubble's synthetic clock.
	cancelAfter time.Duration
	// elapsed is how long Handle ran, on the bubble's synthetic clock.
	elapsed time.Duration
}

func (f *HandlerFixture) Setup() {
	f.inner = &fakeHandler{}
	f.monitor = &fakeMonitor{}
	f.logs = &bytes.Buffer{}
	f.listener = &fakeListener{}
	f.cancel = func() {}
	f.messages = []any{1, 2, 3}
	f.options = []Option{
		Options.Backoff(time.Second),
		Options.Monitor(f.monitor),
		Options.Logger(slog.New(slog.NewTextHandler(f.logs, nil))),
		Options.Random(func() float64 { return 0.5 }),
	}
}

// handle runs the decorated handler once inside a synctest bubble, with the
// default sleeper on the bubble's synthetic clock: every wait passes at once
// in real time, and the fake handler's call times show each wait exactly.
func (f *HandlerFixture) handle(extra ...Option) (recovered any) {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		ctx, cancel := context.WithCancel(messaging.WithOutageListener(context.Background(), f.listener))
		if f.deliveries != nil {
			ctx = messaging.WithDeliveries(ctx, f.deliveries)
		}
		defer cancel()
		f.cancel = cancel
		if f.cancelAfter > 0 {
			timer := time.AfterFunc(f.cancelAfter, cancel)
			defer timer.Stop()
		}
		began := time.Now()
		defer func() {
			recovered = recover()
			f.elapsed = time.Since(began)
		}()
		New(f.inner, append(f.options, extra...)...).Handle(ctx, f.messages...)
	})
	return recovered
}

func (f *HandlerFixture) TestSuccessRunsOnceWithoutWaiting() {
	recovered := f.handle()

	f.So(recovered, should.BeNil)
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.inner.batches[0], should.Equal, []any{1, 2, 3})
	f.So(f.inner.waits(), should.BeEmpty)
	f.So(f.monitor.attempts, should.Equal, []int{1})
	f.So(f.monitor.results, should.Equal, []any{nil})
}

func (f *HandlerFixture) TestPanicsAreRetriedWithTheSameBatchUntilSuccess() {
	f.inner.failures = []any{"first", errors.New("second")}

	recovered := f.handle()

	f.So(recovered, should.BeNil)
	f.So(f.inner.calls, should.Equal, 3)
	f.So(f.inner.batches[2], should.Equal, []any{1, 2, 3})
	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second, time.Second})
	f.So(f.monitor.attempts, should.Equal, []int{1, 2, 3})
	f.So(f.monitor.results[0], should.Equal, "first")
	f.So(f.monitor.results[1], should.Resemble, errors.New("second"))
	f.So(f.monitor.results[2], should.BeNil)
	f.So(f.logs.String(), should.ContainSubstring, `level=WARN msg="Handler failed; retrying." attempt=1 attempts=5 wait=1s panic=first`)
	f.So(f.logs.String(), should.NotContainSubstring, "level=ERROR") // it was retried, not given up
	f.So(f.logs.String(), should.NotContainSubstring, "stack=")      // the stack is DEBUG's
}

func (f *HandlerFixture) TestARetriedAttemptsStackIsLoggedAtDebug() {
	f.inner.failures = []any{"first"}
	f.options = append(f.options, Options.Logger(slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))

	f.handle()

	f.So(f.logs.String(), should.ContainSubstring, `level=DEBUG msg="Stack of a handler failure that will be retried." attempt=1 stack=`)
}

func (f *HandlerFixture) TestTheFailureThatGivesUpIsAnErrorWithItsStack() {
	f.inner.failures = []any{"one", "two"}

	f.handle(Options.Policy(retrypolicy.Fixed(2, time.Second)))

	logs := f.logs.String()
	f.So(strings.Count(logs, "level=WARN"), should.Equal, 1)
	f.So(logs, should.ContainSubstring, `level=ERROR msg="Handler failed on its last attempt; giving up." attempt=2 attempts=2 panic=two stack=`)
}

func (f *HandlerFixture) TestExponentialWaitsDoubleUpToMaxBackoff() {
	f.inner.failures = []any{1, 2, 3, 4, 5}

	f.handle(Options.MaxBackoff(5*time.Second), Options.Policy(retrypolicy.Fixed(6, 0)))

	f.So(f.inner.waits(), should.Equal, []time.Duration{
		time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second,
	})
}

func (f *HandlerFixture) TestTheDefaultBudgetIsFiveAttemptsOfTheDefaultPolicy() {
	f.inner.failures = []any{1, 2, 3, 4, 5, 6, 7}
	f.options = f.options[1:] // no Backoff shorthand: the policy's waits

	recovered := f.handle()

	f.So(recovered, should.Equal, 5)
	f.So(f.inner.calls, should.Equal, 5)
	f.So(f.inner.waits(), should.Equal, []time.Duration{ // the jitter's midpoint: the schedule
		time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
	})
	f.So(f.logs.String(), should.ContainSubstring, `msg="Handler failed on its last attempt; giving up." attempt=5 attempts=5`)
}

func (f *HandlerFixture) TestAPolicyStatesTheAttemptsAndTheWaits() {
	f.inner.failures = []any{1, 2, 3, 4, 5}
	f.options = f.options[1:]

	recovered := f.handle(Options.Policy(retrypolicy.Fixed(3, 7*time.Second)))

	f.So(recovered, should.Equal, 3)
	f.So(f.inner.calls, should.Equal, 3)
	f.So(f.inner.waits(), should.Equal, []time.Duration{7 * time.Second, 7 * time.Second})
}

func (f *HandlerFixture) TestTheShorthandReplacesThePolicysWaitsNotItsAttempts() {
	f.inner.failures = []any{1, 2, 3, 4, 5}

	recovered := f.handle(Options.Policy(retrypolicy.Fixed(2, 7*time.Second)))

	f.So(recovered, should.Equal, 2)
	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second}) // Backoff(1s) from Setup
}

func (f *HandlerFixture) TestAnInvalidPolicyIsReportedAndUsedAsCorrected() {
	f.inner.failures = []any{1, 2, 3}
	f.options = f.options[1:]

	recovered := f.handle(Options.Policy(retrypolicy.Fixed(0, time.Second)))

	f.So(recovered, should.Equal, 1)
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.logs.String(), should.ContainSubstring, "has invalid inputs")
}

func (f *HandlerFixture) TestWithoutMaxBackoffEveryWaitIsBackoff() {
	f.inner.failures = []any{1, 2, 3, 4}

	f.handle()

	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second, time.Second, time.Second, time.Second})
}

func (f *HandlerFixture) TestMaxAttemptsRepanicsWithTheLastValue() {
	f.inner.failures = []any{"one", "two", "three", "four"}

	recovered := f.handle(Options.Policy(retrypolicy.Fixed(3, 0)))

	f.So(recovered, should.Equal, "three")
	f.So(f.inner.calls, should.Equal, 3)
	f.So(f.inner.waits(), should.HaveLength, 2)
	f.So(f.logs.String(), should.ContainSubstring, "giving up")
}

func (f *HandlerFixture) TestFatalErrorRepanicsAtOnce() {
	fatal := messaging.Fatal(errors.New("cannot be fixed"))
	f.inner.failures = []any{fmt.Errorf("wrapped: %w", fatal)}

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.inner.waits(), should.BeEmpty)
	f.So(f.logs.String(), should.ContainSubstring, "fatal")
}

func (f *HandlerFixture) TestImmediateRetryValuesDoNotWait() {
	sentinel := errors.New("deadlock")
	f.inner.failures = []any{fmt.Errorf("tx: %w", sentinel), "busy", "slow"}

	recovered := f.handle(Options.ImmediateRetry(sentinel, "busy", []int{1}))

	f.So(recovered, should.BeNil)
	f.So(f.inner.calls, should.Equal, 4)
	f.So(f.inner.waits(), should.Equal, []time.Duration{0, 0, time.Second})
}

func (f *HandlerFixture) TestImmediateRetryToleratesUncomparableValues() {
	f.inner.failures = []any{[]int{1}, map[string]int{}}

	recovered := f.handle(Options.ImmediateRetry([]int{1}, struct{ v any }{v: []int{1}}))

	f.So(recovered, should.BeNil)
	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second, time.Second})
}

func (f *HandlerFixture) TestCancellationWhileWaitingStopsWithoutRunningAgain() {
	last := errors.New("database down")
	f.inner.failures = []any{last, last}
	f.cancelAfter = 500 * time.Millisecond // halfway through the 1 s wait

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(err, should.NotBeNil)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(errors.Is(err, last), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "context ended")
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.elapsed, should.Equal, 500*time.Millisecond) // the wait ended at the cancellation
}

func (f *HandlerFixture) TestCancellationBeforeAnImmediateRetryStops() {
	f.inner.failures = []any{"busy"}
	f.inner.onCall = func() { f.cancel() }

	recovered := f.handle(Options.ImmediateRetry("busy"))

	err, _ := recovered.(error)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "busy")
	f.So(f.inner.calls, should.Equal, 1)
}

func (f *HandlerFixture) TestAnHourLongWaitEndsAtOnceOnCancellation() {
	f.inner.failures = []any{"fail"}
	f.inner.onCall = func() { f.cancel() }

	recovered := f.handle(Options.Backoff(time.Hour))

	err, _ := recovered.(error)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.elapsed, should.Equal, time.Duration(0))
}

func (f *HandlerFixture) TestStackTraceCanBeOmitted() {
	f.inner.failures = []any{"fail"}

	f.handle(Options.LogStackTrace(false), Options.Policy(retrypolicy.None()))

	f.So(f.logs.String(), should.NotContainSubstring, "stack=")
}

func (f *HandlerFixture) TestNilPanicIsStillAFailure() {
	f.inner.failures = []any{nilPanic{}}

	recovered := f.handle(Options.Policy(retrypolicy.None()))

	f.So(recovered, should.NotBeNil)
}

func (f *HandlerFixture) TestDefaultsAreSane() {
	c := newConfig([]Option{Options.Backoff(-1), Options.MaxBackoff(-1), Options.Policy(retrypolicy.Policy{})})

	f.So(c.policy, should.Equal, retrypolicy.Fixed(retrypolicy.DefaultMaxAttempts, retrypolicy.DefaultInitialWait)) // the shorthand, as a policy
	f.So(newConfig(nil).policy, should.Equal, retrypolicy.Default())
	f.So(newConfig(nil).maxOutage, should.Equal, DefaultMaxOutageBackoff)
	f.So(c.logStack, should.BeTrue)
}

//////////////////////////////////////////////////////////////////////////////

type nilPanic struct{}

type fakeHandler struct {
	calls    int
	times    []time.Time
	batches  [][]any
	failures []any
	onCall   func()
}

// waits returns the time between consecutive calls: inside a synctest
// bubble, exactly the waits the decorator held between attempts.
func (h *fakeHandler) waits() (waits []time.Duration) {
	for i := 1; i < len(h.times); i++ {
		waits = append(waits, h.times[i].Sub(h.times[i-1]))
	}
	return waits
}

func (h *fakeHandler) Handle(_ context.Context, messages ...any) {
	h.calls++
	h.times = append(h.times, time.Now())
	h.batches = append(h.batches, messages)
	if h.onCall != nil {
		h.onCall()
	}
	if len(h.failures) == 0 {
		return
	}
	failure := h.failures[0]
	h.failures = h.failures[1:]
	if _, ok := failure.(nilPanic); ok {
		panic(nil) // recover sees a *runtime.PanicNilError
	}
	panic(failure)
}

type fakeMonitor struct {
	attempts []int
	results  []any
	outages  []string
}

func (m *fakeMonitor) OutageStarted(cause error) {
	m.outages = append(m.outages, "started: "+cause.Error())
}
func (m *fakeMonitor) OutageEnded(waited time.Duration) { m.outages = append(m.outages, "ended") }

func (m *fakeMonitor) HandleAttempted(attempt int, result any) {
	m.attempts = append(m.attempts, attempt)
	m.results = append(m.results, result)
}

func (f *HandlerFixture) TestTheMiddlewareFormIsNew() {
	f.inner.failures = []any{"first"}
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		handler := messaging.Chain(Middleware(f.options...))(f.inner)
		handler.Handle(context.Background(), f.messages...)
	})
	f.So(f.inner.calls, should.Equal, 2)
	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second})
}
