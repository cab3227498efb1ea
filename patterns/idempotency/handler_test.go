package idempotency

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// HandlerFixture runs a batch of decoded messages (m0, m1, m2), their
// envelopes in the context, through New over a fake store and settler.
type HandlerFixture struct {
	*gunit.Fixture
	store    *fakeStore
	settler  *fakeSettler
	monitor  *fakeMonitor
	batch    []messaging.Delivery
	received []any    // what the inner handler was given
	envelope []string // the ids of messaging.DeliveriesFrom in the inner handler
	during   func(ctx context.Context)
	batched  *fakeBatchStore // when set, the guard's store: f.store with the batch calls
}

func (f *HandlerFixture) Setup() {
	f.store = newFakeStore()
	f.settler = newFakeSettler()
	f.monitor = &fakeMonitor{}
	for i := range 3 {
		id := fmt.Sprint("m", i)
		f.batch = append(f.batch, messaging.Delivery{DeliveryID: uint64(i + 1), MessageID: id, SourceQueue: "orders", Message: id})
	}
}

func (f *HandlerFixture) handle(options ...Option) (value any) {
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		f.received = append(f.received, messages...)
		for _, d := range messaging.DeliveriesFrom(ctx) {
			f.envelope = append(f.envelope, d.MessageID)
		}
		if f.during != nil {
			f.during(ctx)
		}
	})
	options = append([]Option{Options.Monitor(f.monitor), Options.Logger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, options...)
	var store Store = f.store
	if f.batched != nil {
		store = f.batched
	}
	handler := Middleware(store, options...)(inner)
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), f.batch), f.settler)
	messages := make([]any, len(f.batch))
	for i, d := range f.batch {
		messages[i] = d.Message
	}
	defer func() { value = recover() }()
	handler.Handle(ctx, messages...)
	return nil
}

func (f *HandlerFixture) TestClaimedMessagesRunAndTheirKeysAreConfirmed() {
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.Equal, []any{"m0", "m1", "m2"})
	f.So(f.envelope, should.Equal, []string{"m0", "m1", "m2"})
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m1", "m2"})
	f.So(f.store.released, should.BeEmpty)
	f.So(f.settler.order, should.BeEmpty) // acknowledged with the batch
	f.So(f.monitor.count("claimed"), should.Equal, 3)
}

func (f *HandlerFixture) TestADuplicateIsAcceptedNotRejectedAndNotRun() {
	f.store.results["m1"] = Duplicate
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.Equal, []any{"m0", "m2"})
	f.So(f.envelope, should.Equal, []string{"m0", "m2"}) // aligned with the subset
	f.So(f.settler.order, should.Equal, []string{"m1 accepted"})
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m2"})
	f.So(f.monitor.count("duplicate"), should.Equal, 1)
}

func (f *HandlerFixture) TestInProgressIsPutBackAfterTheDefaultDelayWithoutRunning() {
	f.store.results["m0"] = InProgress
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.Equal, []any{"m1", "m2"})
	f.So(f.settler.decisions["m0"], should.Equal, messaging.Decision{Verdict: messaging.InProgressed, Delay: 5 * time.Second})
	f.So(f.store.released, should.BeEmpty)
	f.So(f.store.confirmed, should.Equal, []string{"m1", "m2"})
	f.So(f.monitor.count("in_progress"), should.Equal, 1)
}

func (f *HandlerFixture) TestInProgressDelayIsAnOption() {
	f.store.results["m2"] = InProgress
	f.handle(Options.InProgressDelay(2 * time.Second))
	f.So(f.settler.decisions["m2"].Delay, should.Equal, 2*time.Second)
}

func (f *HandlerFixture) TestNothingRunsWhenNothingWasClaimed() {
	f.store.results["m0"], f.store.results["m1"], f.store.results["m2"] = Duplicate, InProgress, Duplicate
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.BeEmpty)
	f.So(f.settler.order, should.Equal, []string{"m0 accepted", "m2 accepted", "m1 in_progress"})
}

func (f *HandlerFixture) TestAFailedHandlerForgetsItsKeysAndThePanicGoesOn() {
	boom := errors.New("boom")
	f.during = func(context.Context) { panic(boom) }
	f.So(f.handle(), should.Equal, boom)
	f.So(f.store.released, should.Equal, []string{"m0", "m1", "m2"})
	f.So(f.store.confirmed, should.BeEmpty)
	f.So(f.monitor.count("released"), should.Equal, 3)
}

func (f *HandlerFixture) TestAMessageAcceptedBeforeThePanicKeepsItsKey() {
	f.during = func(ctx context.Context) {
		_ = messaging.Accept(ctx, messaging.DeliveriesFrom(ctx)[1])
		panic("later")
	}
	f.So(f.handle(), should.Equal, "later")
	f.So(f.store.confirmed, should.Equal, []string{"m1"})
	f.So(f.store.released, should.Equal, []string{"m0", "m2"})
}

func (f *HandlerFixture) TestAMessageSettledOtherwiseThanAcceptedIsReleased() {
	f.during = func(ctx context.Context) {
		envelopes := messaging.DeliveriesFrom(ctx)
		_ = messaging.Retry(ctx, envelopes[0], errors.New("later"))
		_ = messaging.Reject(ctx, envelopes[2], errors.New("bad"))
	}
	f.So(f.handle(), should.BeNil)
	f.So(f.store.released, should.Equal, []string{"m0", "m2"})
	f.So(f.store.confirmed, should.Equal, []string{"m1"})
}

func (f *HandlerFixture) TestTheKeyComesFromIdempotentBy() {
	f.handle(Options.IdempotentBy(func(message any, d messaging.Delivery) string { return "order-" + message.(string) }))
	f.So(f.store.confirmed, should.Equal, []string{"order-m0", "order-m1", "order-m2"})
}

func (f *HandlerFixture) TestAnEmptyKeyIsFatalNotASilentPass() {
	f.handle(Options.IdempotentBy(func(message any, _ messaging.Delivery) string {
		if message == "m1" {
			return ""
		}
		return message.(string)
	}))
	f.So(f.received, should.Equal, []any{"m0", "m2"})
	decision := f.settler.decisions["m1"]
	f.So(decision.Verdict, should.Equal, messaging.Rejected)
	f.So(messaging.IsFatal(decision.Reason), should.BeTrue)
	f.So(decision.Reason.Error(), should.Equal, "acemq: message m1 produced an empty idempotency key")
}

func (f *HandlerFixture) TestAStoreErrorOnClaimRetriesThatMessage() {
	f.store.errs["m1"] = errors.New("deadlock found")
	f.So(f.handle(), should.BeNil)
	f.So(f.received, should.Equal, []any{"m0", "m2"})
	decision := f.settler.decisions["m1"]
	f.So(decision.Verdict, should.Equal, messaging.Retried)
	f.So(decision.Reason.Error(), should.ContainSubstring, "deadlock found")
	f.So(f.monitor.count("store_failed claim"), should.Equal, 1)
}

func (f *HandlerFixture) TestAnUnreachableStoreHoldsTheBatchAsAnOutage() {
	f.store.errs["m1"] = fmt.Errorf("dial: %w", driver.ErrBadConn)
	value := f.handle()
	err, _ := value.(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(errors.Is(err, driver.ErrBadConn), should.BeTrue)
	f.So(f.received, should.BeEmpty)
	f.So(f.store.released, should.Equal, []string{"m0"}) // what it had claimed
	f.So(f.settler.order, should.BeEmpty)
}

func (f *HandlerFixture) TestAFailedSettlementReleasesTheClaimsAndPanics() {
	f.store.results["m2"] = Duplicate
	f.settler.fail = errors.New("not routed")
	f.So(f.handle(), should.Resemble, errors.New("not routed"))
	f.So(f.received, should.BeEmpty)
	f.So(f.store.released, should.Equal, []string{"m0", "m1"})
}

func (f *HandlerFixture) TestAFailedReleaseIsReportedAndThePanicStillGoesOn() {
	f.store.errs["release m0"] = errors.New("gone")
	f.during = func(context.Context) { panic("boom") }
	f.So(f.handle(), should.Equal, "boom")
	f.So(f.monitor.count("store_failed release"), should.Equal, 1)
}

func (f *HandlerFixture) TestAFailedConfirmIsReportedAndIgnored() {
	f.store.errs["confirm m0"] = errors.New("gone")
	f.So(f.handle(), should.BeNil)
	f.So(f.monitor.count("store_failed confirm"), should.Equal, 1)
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m1", "m2"})
}

func (f *HandlerFixture) TestEnvelopesMustTravelInTheContext() {
	handler := Middleware(f.store)(messaging.HandlerFunc(func(context.Context, ...any) {}))
	defer func() {
		err, _ := recover().(error)
		f.So(messaging.IsFatal(err), should.BeTrue)
	}()
	handler.Handle(context.Background(), "m0")
}

func (f *HandlerFixture) TestAKeyFunctionThatPanicsReleasesWhatWasClaimed() {
	value := f.handle(Options.IdempotentBy(func(message any, _ messaging.Delivery) string {
		if message == "m2" {
			panic("no key here")
		}
		return message.(string)
	}))
	f.So(value, should.Equal, "no key here")
	f.So(f.received, should.BeEmpty)
	f.So(f.store.released, should.Equal, []string{"m0", "m1"})
}

// A handler that runs past its claims' lease renews them every third of it
// while it runs, and stops when it returns.
func (f *HandlerFixture) TestALongHandlerRenewsItsClaimsWhileItRuns() {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.store.lease = 9 * time.Second
		f.during = func(context.Context) { time.Sleep(10 * time.Second) } // the bubble's clock: renewed at 3, 6 and 9 s
		f.So(f.handle(), should.BeNil)
		f.So(f.store.renewals(), should.Equal, []string{"m0", "m1", "m2", "m0", "m1", "m2", "m0", "m1", "m2"})
		time.Sleep(time.Minute)                        // the bubble's clock
		f.So(len(f.store.renewals()), should.Equal, 9) // stopped with the handler
	})
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m1", "m2"})
}

// The store says another delivery took m1's key while the handler ran: m1's
// claim is neither confirmed nor released (it is not this delivery's), the
// loss is counted once, and the others are confirmed.
func (f *HandlerFixture) TestAClaimLostDuringTheHandlerIsCountedAndLeftAlone() {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.store.lease = 3 * time.Second
		f.store.errs["renew m1"] = ErrClaimLost
		f.during = func(context.Context) { time.Sleep(10 * time.Second) } // the bubble's clock
		f.So(f.handle(), should.BeNil)
	})
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m2"})
	f.So(f.store.released, should.BeEmpty)
	f.So(f.monitor.count("claim_lost"), should.Equal, 1)
}

// A Confirm the store refuses because the claim was taken is counted as lost,
// not as a store failure.
func (f *HandlerFixture) TestALateConfirmTheStoreRefusesIsCounted() {
	f.store.errs["confirm m2"] = ErrClaimLost
	f.So(f.handle(), should.BeNil)
	f.So(f.monitor.count("claim_lost"), should.Equal, 1)
	f.So(f.monitor.count("store_failed confirm"), should.Equal, 0)
}

// A renewal that fails for another reason is reported and tried again.
func (f *HandlerFixture) TestAFailedRenewalIsReportedAndTriedAgain() {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.store.lease = 3 * time.Second
		f.store.errs["renew m0"] = errors.New("deadlock found")
		f.during = func(context.Context) { time.Sleep(5500 * time.Millisecond) } // the bubble's clock
		f.So(f.handle(), should.BeNil)
	})
	f.So(f.monitor.count("store_failed renew"), should.Equal, 5)
	f.So(f.store.confirmed, should.Equal, []string{"m0", "m1", "m2"})
}

// A claim with no lease (a claim in a transaction) is not renewed.
func (f *HandlerFixture) TestAClaimWithoutALeaseIsNotRenewed() {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.during = func(context.Context) { time.Sleep(time.Hour) } // the bubble's clock
		f.So(f.handle(), should.BeNil)
	})
	f.So(f.store.renewals(), should.BeEmpty)
}
