package ordering

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestHandlerFixture(t *testing.T) {
	gunit.Run(new(HandlerFixture), t)
}

// HandlerFixture runs batches through one Middleware(ByHeader("entity")) instance
// from several goroutines (the workers) inside a synctest bubble, so "has not
// started" is observed when every goroutine is blocked, not after a sleep.
type HandlerFixture struct {
	*gunit.Fixture
	inner   *recorder
	monitor *fakeMonitor
	handler messaging.Handler
}

func (f *HandlerFixture) Setup() {
	f.inner = newRecorder()
	f.monitor = &fakeMonitor{}
	f.handler = Middleware(ByHeader("entity"), Options.Monitor(f.monitor))(f.inner)
}

// run hands the batch to the handler on a goroutine of its own (a worker).
func (f *HandlerFixture) run(ctx context.Context, batch ...messaging.Delivery) chan any {
	recovered := make(chan any, 1)
	go func() {
		defer func() { recovered <- recover() }()
		messages := make([]any, len(batch))
		for i, d := range batch {
			messages[i] = d.Message
		}
		f.handler.Handle(messaging.WithDeliveries(ctx, batch), messages...)
	}()
	return recovered
}

func (f *HandlerFixture) bubble(test func(ctx context.Context)) {
	synctest.Test(f.T().(*testing.T), func(*testing.T) { test(context.Background()) })
}

func (f *HandlerFixture) TestASecondBatchWithTheSameKeyWaitsForTheFirst() {
	f.bubble(func(ctx context.Context) {
		f.inner.holdBack("m1")
		first := f.run(ctx, delivery("m1", 1, "A"))
		synctest.Wait()
		second := f.run(ctx, delivery("m2", 2, "A"))
		synctest.Wait()
		f.So(f.inner.seen(), should.Equal, []string{"start m1"})
		time.Sleep(time.Second) // on the bubble's clock: the wait is measured
		f.inner.release("m1")
		<-first
		<-second
	})
	f.So(f.inner.seen(), should.Equal, []string{"start m1", "end m1", "start m2", "end m2"})
	f.So(f.monitor.waited, should.Equal, []time.Duration{time.Second})
}

func (f *HandlerFixture) TestDifferentKeysRunAtOnce() {
	f.bubble(func(ctx context.Context) {
		f.inner.holdBack("m1")
		f.inner.holdBack("m2")
		first := f.run(ctx, delivery("m1", 1, "A"))
		second := f.run(ctx, delivery("m2", 2, "B"))
		synctest.Wait()
		f.So(f.inner.seen(), should.HaveLength, 2) // both started, both held
		f.inner.release("m2")
		f.inner.release("m1")
		<-first
		<-second
	})
	waits, skipped := f.monitor.counts()
	f.So(waits, should.Equal, 0)
	f.So(skipped, should.Equal, 0)
}

func (f *HandlerFixture) TestALaterDeliveryThatArrivesFirstLetsTheEarlierOneGoFirst() {
	f.bubble(func(ctx context.Context) {
		later := f.run(ctx, delivery("m2", 2, "A"))
		synctest.Wait()
		f.So(f.inner.seen(), should.BeEmpty) // waiting for tag 1 to arrive
		earlier := f.run(ctx, delivery("m1", 1, "A"))
		<-earlier
		<-later
	})
	f.So(f.inner.seen(), should.Equal, []string{"start m1", "end m1", "start m2", "end m2"})
	_, skipped := f.monitor.counts()
	f.So(skipped, should.Equal, 0)
}

func (f *HandlerFixture) TestADeliveryThatNeverArrivesIsGivenUpOnAfterTheWindow() {
	var took time.Duration
	f.bubble(func(ctx context.Context) {
		began := time.Now()
		<-f.run(ctx, delivery("m3", 3, "A")) // tags 1 and 2 never come
		took = time.Since(began)
		<-f.run(ctx, delivery("m4", 4, "A")) // the gap is closed: no wait now
		f.So(time.Since(began), should.Equal, took)
	})
	f.So(took, should.Equal, DefaultArrivalWindow)
	f.So(f.inner.seen(), should.Equal, []string{"start m3", "end m3", "start m4", "end m4"})
	_, skipped := f.monitor.counts()
	f.So(skipped, should.Equal, 1)
}

func (f *HandlerFixture) TestAMessageWithoutAKeyIsNotOrdered() {
	f.bubble(func(ctx context.Context) {
		f.inner.holdBack("m1")
		first := f.run(ctx, delivery("m1", 1, ""))
		synctest.Wait()
		<-f.run(ctx, delivery("m2", 2, "")) // runs while m1 is held
		f.inner.release("m1")
		<-first
	})
	f.So(f.inner.seen(), should.Equal, []string{"start m1", "start m2", "end m2", "end m1"})
}

func (f *HandlerFixture) TestABatchIsHandledOneMessageAtATimeEachInItsKeysTurn() {
	f.bubble(func(ctx context.Context) {
		f.inner.holdBack("a1")
		f.inner.holdBack("b2")
		a := f.run(ctx, delivery("a1", 1, "A"))
		b := f.run(ctx, delivery("b2", 2, "B"))
		synctest.Wait()
		both := f.run(ctx, delivery("a3", 3, "A"), delivery("b4", 4, "B"))
		synctest.Wait()
		f.So(f.inner.seen(), should.HaveLength, 2) // a1 and b2 started, both held
		f.inner.release("a1")
		<-a
		synctest.Wait()
		f.So(f.inner.seen()[2:], should.Equal, []string{"end a1", "start a3", "end a3"}) // b4 waits for b2
		f.inner.release("b2")
		<-b
		<-both
	})
	f.So(f.inner.seen()[5:], should.Equal, []string{"end b2", "start b4", "end b4"})
}

func (f *HandlerFixture) TestTwoBatchesWhoseTagsCrossKeepEveryKeyInOrder() {
	f.bubble(func(ctx context.Context) {
		// Two workers took 1, 3 and 2, 4 at the same moment; A is 1 and 4, B
		// is 2 and 3: whole batches could not keep both keys in order.
		first := f.run(ctx, delivery("A1", 1, "A"), delivery("B3", 3, "B"))
		second := f.run(ctx, delivery("B2", 2, "B"), delivery("A4", 4, "A"))
		<-first
		<-second
	})
	order := map[string][]string{}
	for _, event := range f.inner.seen() {
		if id, started := strings.CutPrefix(event, "start "); started {
			order[id[:1]] = append(order[id[:1]], id)
		}
	}
	f.So(order["A"], should.Equal, []string{"A1", "A4"})
	f.So(order["B"], should.Equal, []string{"B2", "B3"})
}

func (f *HandlerFixture) TestACancelledWaitPanicsWithAnOutageAndHandsTheKeyOn() {
	var recovered any
	f.bubble(func(background context.Context) {
		f.inner.holdBack("m1")
		first := f.run(background, delivery("m1", 1, "A"))
		synctest.Wait()
		ctx, cancel := context.WithCancel(background)
		second := f.run(ctx, delivery("m2", 2, "A"))
		third := f.run(background, delivery("m3", 3, "A"))
		synctest.Wait()
		cancel()
		recovered = <-second
		f.inner.release("m1")
		<-first
		<-third
	})
	err, _ := recovered.(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(f.inner.seen(), should.Equal, []string{"start m1", "end m1", "start m3", "end m3"})
}

func (f *HandlerFixture) TestTheNextBatchRunsAfterAPanic() {
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		if messaging.DeliveriesFrom(ctx)[0].MessageID == "m1" {
			panic("failed")
		}
		f.inner.Handle(ctx, messages...)
	})
	f.handler = Middleware(ByHeader("entity"))(inner)
	f.bubble(func(ctx context.Context) {
		f.So(<-f.run(ctx, delivery("m1", 1, "A")), should.Equal, "failed")
		f.So(<-f.run(ctx, delivery("m2", 2, "A")), should.BeNil)
	})
	f.So(f.inner.seen(), should.Equal, []string{"start m2", "end m2"})
}

func (f *HandlerFixture) TestANewChannelStartsItsTagsAgain() {
	f.bubble(func(ctx context.Context) {
		<-f.run(ctx, delivery("m1", 1, "A"))
		<-f.run(ctx, delivery("m2", 2, "A"))
		began := time.Now()
		<-f.run(ctx, delivery("again", 1, "A")) // reconnected
		<-f.run(ctx, delivery("next", 2, "A"))
		f.So(time.Since(began), should.Equal, time.Duration(0))
	})
	_, skipped := f.monitor.counts()
	f.So(skipped, should.Equal, 0)
}

func (f *HandlerFixture) TestAMismatchedContextIsFatal() {
	recovered := func() (value any) {
		defer func() { value = recover() }()
		f.handler.Handle(context.Background(), "m1")
		return nil
	}()
	err, _ := recovered.(error)
	f.So(messaging.IsFatal(err), should.BeTrue)
}

func (f *HandlerFixture) TestKeysAreForgottenWhenIdle() {
	const keys = 100_000
	s := newSequencer()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tickets := make([]*ticket, 0, keys)
	for i, key := range ids("key-", keys) {
		tickets = append(tickets, s.arrive("orders", []group{{tags: []uint64{uint64(i + 1)}, keys: []string{key}}})...)
	}
	held, _ := s.size()
	f.So(held, should.Equal, keys)
	for _, t := range tickets {
		s.leave(t)
	}
	tickets = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	held, pending := s.size()
	f.So(held, should.Equal, 0)
	f.So(pending, should.Equal, 0)
	f.So(int64(after.HeapAlloc)-int64(before.HeapAlloc), should.BeLessThan, 1<<20)
	runtime.KeepAlive(s)
}
