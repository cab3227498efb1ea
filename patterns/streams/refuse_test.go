package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestRefuseFixture(t *testing.T) {
	gunit.Run(new(RefuseFixture), t)
}

type RefuseFixture struct {
	*gunit.Fixture
	settler *fakeSettler
	monitor *countingMonitor
	errs    []error
}

func (f *RefuseFixture) Setup() {
	f.settler = newFakeSettler()
	f.monitor = &countingMonitor{}
	f.errs = nil
}

// handle runs settle on each delivery under RefuseRetry, with the fake
// settler in the context as the runtime's settlement would put it.
func (f *RefuseFixture) handle(settle func(ctx context.Context, d messaging.Delivery) error, deliveries ...messaging.Delivery) {
	h := RefuseRetry(f.monitor)(messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		for _, d := range messaging.DeliveriesFrom(ctx) {
			f.errs = append(f.errs, settle(ctx, d))
		}
	}))
	ctx := messaging.WithDeliveries(messaging.WithSettler(context.Background(), f.settler), deliveries)
	h.Handle(ctx, make([]any, len(deliveries))...)
}

var errStoreDown = errors.New("the projection store is down")

func (f *RefuseFixture) TestARetryIsParkedWithTheSeedsRefusal() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return messaging.Retry(ctx, d, errStoreDown) },
		at("order-1", int64(41337)))
	f.So(f.errs, should.Resemble, []error{nil})
	f.So(f.settler.settled, should.HaveLength, 1)
	decision := f.settler.settled[0]
	f.So(decision.Verdict, should.Equal, messaging.Parked)
	f.So(errors.Is(decision.Reason, errStoreDown), should.BeTrue)
	var refusal *RetryOnStreamError
	f.So(errors.As(decision.Reason, &refusal), should.BeTrue)
	f.So(decision.Reason.Error(), should.Equal, `acemq: a handler on stream "orders.log" returned messaging.Retry for message `+
		`order-1 at offset 41337, which this library refuses: a retry republishes the message onto the queue it came `+
		`from, and on a stream that appends a second copy to the log at a new offset — for every consumer to read now `+
		`and on every replay afterwards. It was parked on orders.log.parked instead. A stream handler has two honest `+
		`choices: park it deliberately with messaging.Park(ctx, delivery, err), or record the x-stream-offset header `+
		`and return messaging.Accept(ctx, delivery) to checkpoint and move on. The handler's reason was: the `+
		`projection store is down`)
	f.So(f.monitor.refused.Load(), should.Equal, 1)
	got, ok := messaging.DecisionOf(messaging.WithSettler(context.Background(), f.settler), at("order-1", int64(1)))
	f.So(ok, should.BeTrue)
	f.So(got.Verdict, should.Equal, messaging.Parked)
}

func (f *RefuseFixture) TestAnInProgressIsRefusedAlikeAndAMissingOffsetIsLeftOut() {
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.InProgress(ctx, d, time.Second)
	},
		messaging.Delivery{MessageID: "order-2", SourceQueue: "orders.log"})
	decision := f.settler.settled[0]
	f.So(decision.Verdict, should.Equal, messaging.Parked)
	f.So(decision.Reason.Error(), should.StartWith, `acemq: a handler on stream "orders.log" returned messaging.InProgress for message order-2, which this library refuses:`)
	f.So(decision.Reason.Error(), should.EndWith, "to checkpoint and move on.")
	f.So(errors.Unwrap(decision.Reason), should.BeNil)
}

func (f *RefuseFixture) TestOtherSettlementsPassThrough() {
	reason := errors.New("bad order")
	verbs := []func(ctx context.Context, d messaging.Delivery) error{
		func(ctx context.Context, d messaging.Delivery) error { return messaging.Accept(ctx, d) },
		func(ctx context.Context, d messaging.Delivery) error { return messaging.Reject(ctx, d, reason) },
		func(ctx context.Context, d messaging.Delivery) error { return messaging.Park(ctx, d, reason) },
	}
	for _, verb := range verbs {
		f.handle(verb, at("m", int64(1)))
	}
	f.So(f.settler.settled, should.Resemble, []messaging.Decision{
		{Verdict: messaging.Accepted}, {Verdict: messaging.Rejected, Reason: reason}, {Verdict: messaging.Parked, Reason: reason},
	})
	f.So(f.monitor.refused.Load(), should.Equal, 0)
}

func (f *RefuseFixture) TestAFailedParkIsReturnedAndNotCounted() {
	f.settler.err = errors.New("publish timed out")
	f.handle(func(ctx context.Context, d messaging.Delivery) error { return messaging.Retry(ctx, d, errStoreDown) },
		at("order-3", int64(3)))
	f.So(f.errs[0], should.Equal, f.settler.err)
	f.So(f.monitor.refused.Load(), should.Equal, 0)
}

func (f *RefuseFixture) TestWithoutASettlerTheHandlerRunsAsItIs() {
	var err error
	RefuseRetry(nil)(messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		err = messaging.Retry(ctx, at("m", int64(1)), errStoreDown)
	})).Handle(context.Background())
	f.So(errors.Is(err, messaging.ErrNoSettler), should.BeTrue)
}
