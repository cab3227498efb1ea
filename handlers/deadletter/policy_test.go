package deadletter

import (
	"context"
	"errors"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

func (f *OutcomesFixture) TestRetryWithoutAStatedBudgetGivesUpAfterTheDefaultFive() {
	fifth := delivery("a")
	fifth.Attempt = 5
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("still failing"))
	}, nil, fifth)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exhausted 5 attempts: still failing"})
}

func (f *OutcomesFixture) TestAPolicyStatesRetrysBudgetAndWaits() {
	policy := []Option{Options.Policy(retrypolicy.Fixed(3, 7*time.Second).WaitInBrokerFrom(0))}
	second := delivery("a")
	second.Attempt = 2
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("later"))
	}, policy, second)
	f.So(f.waited, should.Equal, 7*time.Second)
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 3)

	third := delivery("bb")
	third.Attempt = 3
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("again"))
	}, policy, third)
	f.So(f.connector.targets()[1], should.Equal, "q.dlq bb: exhausted 3 attempts: again")
}

func (f *OutcomesFixture) TestAPolicyWithAMaximumAgeDeadLettersAnOldMessage() {
	policy := []Option{Options.Policy(retrypolicy.Fixed(10, time.Second).GiveUpAfter(time.Hour))}
	old := delivery("a")
	old.FirstSeen = bubbleEpoch.Add(-2 * time.Hour) // the handler runs in a synctest bubble
	f.handle(func(ctx context.Context, d messaging.Delivery) error {
		return messaging.Retry(ctx, d, errors.New("slow"))
	}, policy, old)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exceeded the maximum message age of 1h0m0s: slow"})
}

func (f *HandlerFixture) TestThePolicyStatesTheBudgetInTheReason() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	f.handler(Options.Policy(retrypolicy.Exponential(4, time.Second, time.Minute))).Handle(context.Background(), delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exhausted 4 attempts: poison"})
}

func (f *HandlerFixture) TestAnInnerSettlementDecoratorTakesOverFromAnOuterOne() {
	f.inner.action = func(_ context.Context, messages []any) {
		for _, m := range messages {
			if m == "bb" {
				panic(errors.New("poison"))
			}
		}
	}
	innerMonitor := &fakeMonitor{}
	inner := New(f.connector, f.inner, Options.Monitor(innerMonitor))
	outer := New(f.connector, inner, Options.Monitor(f.monitor), Options.FullDelivery(true))
	bad := delivery("ccc")
	bad.Undecodable = errors.New("not JSON")

	value := recovered(func() { outer.Handle(context.Background(), delivery("a"), delivery("bb"), bad) })

	f.So(value, should.BeNil)
	f.So(f.connector.targets(), should.Equal, []string{
		"q.parked ccc: could not be decoded: not JSON", // by the outer, before the inner runs
		"q.dlq bb: the handler failed: poison",         // by the inner alone
	})
	f.So(f.monitor.events, should.Equal, []string{"q parked could not be decoded: not JSON"})
}

func (f *HandlerFixture) TestAnInnerOnesFailureIsReRaisedByTheOuterOne() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	f.connector.commitErr = errors.New("broker gone")
	inner := New(f.connector, f.inner)
	outer := New(f.connector, inner, Options.Monitor(f.monitor), Options.FullDelivery(true))

	value := recovered(func() { outer.Handle(context.Background(), delivery("a")) })

	f.So(value, should.NotBeNil)
	f.So(f.monitor.events, should.BeEmpty)
}

func (f *HandlerFixture) TestCloseClosesTheRepublishConnection() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	handler := f.handler()
	handler.Handle(context.Background(), delivery("a"))
	f.So(handler.(interface{ Close() error }).Close(), should.BeNil)
	f.So(f.connector.connections[0].closed, should.BeTrue)
}

func (f *HandlerFixture) TestTheMiddlewareFormIsNew() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	handler := messaging.Chain(Middleware(f.connector, Options.Monitor(f.monitor)))(f.inner)
	handler.Handle(context.Background(), delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler failed: poison"})
}
