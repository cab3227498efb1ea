package deadletter

import (
	"context"
	"errors"
	"slices"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

// unsettledOf runs f and returns the *UnsettledError it panicked with.
func (f *HandlerFixture) unsettledOf(run func()) *UnsettledError {
	value := recovered(run)
	err, _ := value.(error)
	var unsettled *UnsettledError
	f.So(errors.As(err, &unsettled), should.BeTrue)
	return unsettled
}

func ids(deliveries []messaging.Delivery) []string {
	var out []string
	for _, d := range deliveries {
		out = append(out, d.MessageID)
	}
	return out
}

func (f *HandlerFixture) TestAFailedSetAsideOfOneMessageLeavesTheRestOfTheBatchHandled() {
	f.connector.unroutable = "q.dlq"
	f.inner.action = func(_ context.Context, messages []any) {
		if slices.Contains(messages, any("bb")) {
			panic(errors.New("poison"))
		}
	}
	unsettled := f.unsettledOf(func() {
		f.handler().Handle(messaging.WithDeliveries(context.Background(), []messaging.Delivery{delivery("a"), delivery("bb"), delivery("ccc")}), "a", "bb", "ccc")
	})

	f.So(ids(unsettled.Deliveries), should.Equal, []string{"bb"})
	f.So(errors.Is(unsettled, messaging.ErrUnroutable), should.BeTrue)
	f.So(f.inner.calls, should.Equal, [][]any{{"a", "bb", "ccc"}, {"a"}, {"bb"}, {"ccc"}})
	f.So(f.monitor.events, should.Contain, "q accepted ")
	f.So(f.monitor.events[len(f.monitor.events)-2:], should.Equal, []string{"q accepted ", "q accepted "})
}

func (f *HandlerFixture) TestAFailedParkLeavesTheRestOfTheBatchToTheHandler() {
	f.connector.unroutable = "q.parked"
	bad := delivery("bad")
	bad.Undecodable = errors.New("not JSON")
	unsettled := f.unsettledOf(func() { f.handler(Options.FullDelivery(true)).Handle(context.Background(), delivery("a"), bad) })

	f.So(ids(unsettled.Deliveries), should.Equal, []string{"bad"})
	f.So(f.inner.calls, should.HaveLength, 1) // "a" was handled
	f.So(f.monitor.events[len(f.monitor.events)-1], should.Equal, "q accepted ")
}

func (f *HandlerFixture) TestAHandlerThatStopsOnAFailedRejectHasTheOthersRunAlone() {
	f.connector.unroutable = "q.dlq"
	f.inner.action = func(ctx context.Context, messages []any) {
		for _, m := range messages {
			if d := m.(messaging.Delivery); d.MessageID == "bb" {
				if err := messaging.Reject(ctx, d, errors.New("refused")); err != nil {
					panic(err)
				}
			}
		}
	}
	unsettled := f.unsettledOf(func() {
		f.handler(Options.FullDelivery(true)).Handle(context.Background(), delivery("a"), delivery("bb"), delivery("ccc"))
	})

	f.So(ids(unsettled.Deliveries), should.Equal, []string{"bb"})
	f.So(len(f.inner.calls), should.Equal, 3) // the batch, then "a" and "ccc" alone; never "bb" again
	f.So(f.connector.targets(), should.BeEmpty)
}

func (f *HandlerFixture) TestAnIgnoredFailedSettlementIsStillReported() {
	f.connector.unroutable = "q.dlq"
	f.inner.action = func(ctx context.Context, messages []any) {
		_ = messaging.Reject(ctx, messages[0].(messaging.Delivery), errors.New("refused"))
	}
	unsettled := f.unsettledOf(func() {
		f.handler(Options.FullDelivery(true)).Handle(context.Background(), delivery("a"), delivery("bb"))
	})

	f.So(ids(unsettled.Deliveries), should.Equal, []string{"a"})
	f.So(f.inner.calls, should.HaveLength, 1)
}

func (f *HandlerFixture) TestAnOuterDecoratorReportsTheInnerOnesFailuresWithItsOwn() {
	f.connector.unroutable = "q.parked"
	bad := delivery("bad")
	bad.Undecodable = errors.New("not JSON")
	f.inner.action = func(ctx context.Context, messages []any) {
		if err := messaging.Park(ctx, messages[0].(messaging.Delivery), errors.New("later")); err != nil {
			panic(err)
		}
	}
	inner := New(f.connector, f.inner, Options.FullDelivery(true))
	outer := New(f.connector, inner, Options.FullDelivery(true))
	unsettled := f.unsettledOf(func() { outer.Handle(context.Background(), delivery("a"), bad) })

	f.So(ids(unsettled.Deliveries), should.Equal, []string{"bad", "a"})
}

// partlyOf runs f and returns the *PartlySettledError it panicked with.
func (f *HandlerFixture) partlyOf(run func()) *PartlySettledError {
	value := recovered(run)
	err, _ := value.(error)
	var partly *PartlySettledError
	f.So(errors.As(err, &partly), should.BeTrue)
	return partly
}

func (f *HandlerFixture) TestAnOutageMidIsolationListsTheMessagesAlreadySetAsideAndCompleted() {
	f.inner.action = func(ctx context.Context, messages []any) {
		switch {
		case len(messages) > 1:
			panic(errors.New("poison somewhere"))
		case messages[0] == any("bb"):
			if err := messaging.Reject(ctx, messaging.DeliveriesFrom(ctx)[0], errors.New("refused")); err != nil {
				panic(err)
			}
		case messages[0] == any("ddd"):
			panic(messaging.Outage(errors.New("the database went away")))
		}
	}
	partly := f.partlyOf(func() {
		f.handler().Handle(messaging.WithDeliveries(context.Background(), []messaging.Delivery{delivery("a"), delivery("bb"), delivery("ddd"), delivery("eeee")}), "a", "bb", "ddd", "eeee")
	})

	f.So(ids(partly.Settled), should.Equal, []string{"a", "bb"}) // "a" completed alone, "bb" dead-lettered
	f.So(messaging.IsOutage(partly), should.BeTrue)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq bb: the handler rejected it: refused"})
	f.So(f.inner.calls, should.Equal, [][]any{{"a", "bb", "ddd", "eeee"}, {"a"}, {"bb"}, {"ddd"}}) // never "eeee" alone
}

func (f *HandlerFixture) TestAShutdownAfterARejectListsTheRejectedMessage() {
	ctx, cancel := context.WithCancel(context.Background())
	f.inner.action = func(ctx context.Context, messages []any) {
		if err := messaging.Reject(ctx, messaging.DeliveriesFrom(ctx)[0], errors.New("refused")); err != nil {
			panic(err)
		}
		cancel() // the service stops while the batch runs
		panic(errors.New("interrupted"))
	}
	partly := f.partlyOf(func() {
		f.handler().Handle(messaging.WithDeliveries(ctx, []messaging.Delivery{delivery("a"), delivery("bb"), delivery("ccc")}), "a", "bb", "ccc")
	})

	f.So(ids(partly.Settled), should.Equal, []string{"a"})
	f.So(partly.Err, should.BeError, "interrupted")
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler rejected it: refused"})
}

func (f *HandlerFixture) TestAnOutageBeforeAnythingIsSettledPanicsWithTheOutageItself() {
	outage := messaging.Outage(errors.New("the database went away"))
	f.inner.action = func(context.Context, []any) { panic(outage) }
	value := recovered(func() {
		f.handler().Handle(messaging.WithDeliveries(context.Background(), []messaging.Delivery{delivery("a"), delivery("bb")}), "a", "bb")
	})
	f.So(value, should.Equal, outage)
}

func (f *HandlerFixture) TestAnAcceptanceIsNotForGoodWhileTheBatchMayRollBack() {
	f.inner.action = func(ctx context.Context, messages []any) {
		_ = messaging.Accept(ctx, messaging.DeliveriesFrom(ctx)[0])
		panic(messaging.Outage(errors.New("the commit failed")))
	}
	value := recovered(func() {
		f.handler().Handle(messaging.WithDeliveries(context.Background(), []messaging.Delivery{delivery("a"), delivery("bb")}), "a", "bb")
	})
	err, _ := value.(error)
	var partly *PartlySettledError
	f.So(errors.As(err, &partly), should.BeFalse)
	f.So(messaging.IsOutage(err), should.BeTrue)
}
