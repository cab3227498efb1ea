package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

var (
	databaseDown = messaging.Outage(errors.New("database down"))
	refused      = fmt.Errorf("begin: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
)

func (f *HandlerFixture) TestAnOutageSpendsNoAttempt() {
	f.inner.failures = []any{databaseDown, refused, databaseDown, databaseDown, databaseDown}
	recovered := f.handle(Options.Policy(retrypolicy.Fixed(2, 0)))
	f.So(recovered, should.BeNil)
	f.So(f.inner.calls, should.Equal, 6)
	f.So(f.monitor.attempts, should.Equal, []int{1})
	f.So(f.monitor.outages, should.Equal, []string{"started: database down", "ended"})
	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second})
	f.So(f.listener.events, should.Equal, []string{"waiting 1s", "waiting 2s", "waiting 4s", "waiting 8s", "waiting 16s", "resumed"})
	f.So(f.logs.String(), should.ContainSubstring, "level=WARN")
	f.So(f.logs.String(), should.ContainSubstring, "waiting on an outage")
	f.So(f.logs.String(), should.NotContainSubstring, "level=ERROR")
}

func (f *HandlerFixture) TestTheOutageWaitIsCappedWhateverMaxBackoffSays() {
	f.inner.failures = []any{databaseDown, databaseDown, databaseDown, databaseDown, databaseDown}
	f.handle(Options.MaxBackoff(time.Hour), Options.MaxOutageBackoff(5*time.Second))
	f.So(f.inner.waits(), should.Equal, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second})
}

func (f *HandlerFixture) TestTheDefaultOutageCapIsThirtySeconds() {
	for range 10 {
		f.inner.failures = append(f.inner.failures, databaseDown)
	}
	f.handle(Options.Policy(retrypolicy.Fixed(5, 10*time.Second).WithJitter(1)), Options.Random(func() float64 { return 0.99 }))
	f.So(f.inner.waits()[len(f.inner.waits())-1], should.Equal, 30*time.Second)
	for _, wait := range f.inner.waits() {
		f.So(wait, should.BeLessThanOrEqualTo, 30*time.Second)
	}
}

func (f *HandlerFixture) TestTheMessagesOwnFailureStillSpendsTheBudgetAndGivesUp() {
	f.inner.failures = []any{"own 1", databaseDown, "own 2", "own 3"}
	recovered := f.handle(Options.Policy(retrypolicy.Fixed(2, 0)))
	f.So(recovered, should.Equal, "own 2")
	f.So(f.inner.calls, should.Equal, 3)
	f.So(f.monitor.attempts, should.Equal, []int{1, 2})
	f.So(f.monitor.outages, should.Equal, []string{"started: database down", "ended"})
	f.So(f.listener.events, should.Equal, []string{"waiting 1s", "resumed"})
}

func (f *HandlerFixture) TestFatalWinsOverAnOutage() {
	f.inner.failures = []any{messaging.Fatal(refused)}
	recovered := f.handle()
	err, _ := recovered.(error)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.monitor.outages, should.BeEmpty)
}

func (f *HandlerFixture) TestCancellationEndsTheWaitUnacknowledgedAndKeepsTheOutageMark() {
	f.inner.failures = []any{databaseDown, databaseDown}
	f.cancelAfter = 500 * time.Millisecond // halfway through the first 1 s outage wait
	recovered := f.handle(Options.Policy(retrypolicy.None()))
	err, _ := recovered.(error)
	f.So(err, should.NotBeNil)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "stopped waiting on an outage")
	f.So(f.inner.calls, should.Equal, 1)
	f.So(f.monitor.attempts, should.BeEmpty)
	f.So(f.monitor.outages, should.Equal, []string{"started: database down", "ended"})
	f.So(f.listener.events, should.Equal, []string{"waiting 1s", "resumed"})
}

// TestAnOutageWaitEndsAtOnceOnCancellation runs the default sleeper on a
// synthetic clock: the batch is held across many capped waits, and cancelling
// ends the wait at that instant without another try.
func TestAnOutageWaitEndsAtOnceOnCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		inner := &fakeHandler{}
		for range 1000 {
			inner.failures = append(inner.failures, databaseDown)
		}
		done := make(chan any, 1)
		started := time.Now()
		go func() {
			defer func() { done <- recover() }()
			New(inner, Options.Policy(retrypolicy.None()),
				Options.Logger(quiet)).Handle(ctx, "m")
		}()
		time.Sleep(10 * time.Minute) // the bubble's synthetic clock: ten minutes pass at once
		synctest.Wait()
		calls := inner.calls
		// 1+2+4+8+16 s, then every 30 s: 5 + ceil((600-31)/30) tries after the first.
		if calls < 20 || calls > 25 {
			t.Fatalf("held for 10 minutes with a 30 s cap, the handler ran %d times; want about 24", calls)
		}
		cancel()
		synctest.Wait()
		value := <-done
		err, _ := value.(error)
		if !errors.Is(err, context.Canceled) || !messaging.IsOutage(err) {
			t.Fatalf("panic value %v: want the cancellation with the outage's mark", value)
		}
		if inner.calls != calls {
			t.Fatalf("the handler ran again after the cancellation")
		}
		if elapsed := time.Since(started); elapsed != 10*time.Minute {
			t.Fatalf("the wait ended %s after it began; want exactly at the cancellation", elapsed)
		}
	})
}

var quiet = slog.New(slog.DiscardHandler)

type fakeListener struct{ events []string }

func (l *fakeListener) Waiting(_ error, wait time.Duration) {
	l.events = append(l.events, "waiting "+wait.String())
}
func (l *fakeListener) Resumed() { l.events = append(l.events, "resumed") }
