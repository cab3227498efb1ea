package deadletter

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/retrypolicy"
)

var refused = fmt.Errorf("begin: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})

func (f *HandlerFixture) TestAnOutageIsNeverDeadLettered() {
	f.inner.action = func(context.Context, []any) { panic(messaging.Outage(errors.New("database down"))) }
	for _, batch := range [][]any{{delivery("a")}, {delivery("a"), delivery("bb"), delivery("ccc")}} {
		f.Setup()
		f.inner.action = func(context.Context, []any) { panic(refused) }
		value := recovered(func() { f.handler(Options.Policy(retrypolicy.Fixed(3, 0))).Handle(context.Background(), batch...) })
		f.So(value, should.Equal, refused)
		f.So(f.connector.dispatches(), should.BeEmpty)
		f.So(f.inner.calls, should.HaveLength, 1) // not isolated: every message would fail the same way
		f.So(f.monitor.events, should.HaveLength, len(batch))
		f.So(f.monitor.events[0], should.StartWith, "q held_for_outage begin: dial tcp")
	}
}

func (f *HandlerFixture) TestTheMessagesOwnFailureIsStillDeadLetteredAfterTheBudget() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("quantity must be positive")) }
	handler := New(f.connector, rerun(3, f.inner), Options.Monitor(f.monitor), Options.Policy(retrypolicy.Fixed(3, 0)))
	handler.Handle(context.Background(), delivery("a"))
	f.So(f.inner.calls, should.HaveLength, 3)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exhausted 3 attempts: quantity must be positive"})
}

func (f *HandlerFixture) TestEveryMessageFailingAloneTheSameWayIsAnOutage() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("Error 1105: the payment service is unavailable")) }
	batch := []any{delivery("a"), delivery("bb"), delivery("ccc")}
	value := recovered(func() { f.handler().Handle(context.Background(), batch...) })
	err, _ := value.(error)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "all 3 messages of the batch failed alone the same way")
	f.So(f.inner.calls, should.HaveLength, 4) // the batch, then each alone
	f.So(f.connector.dispatches(), should.BeEmpty)
	f.So(f.monitor.events, should.HaveLength, 3)
	for _, event := range f.monitor.events {
		f.So(event, should.StartWith, "q held_for_outage deadletter: all 3 messages")
	}
}

func (f *HandlerFixture) TestMessagesFailingAloneEachTheirOwnWayAreDeadLettered() {
	f.inner.action = func(_ context.Context, messages []any) {
		if len(messages) == 1 {
			panic(fmt.Errorf("order %v is invalid", messages[0]))
		}
		panic(errors.New("the batch failed"))
	}
	f.handler().Handle(context.Background(), delivery("a"), delivery("bb"))
	f.So(f.connector.targets(), should.Equal, []string{
		"q.dlq a: the handler failed: order a is invalid",
		"q.dlq bb: the handler failed: order bb is invalid",
	})
}

func (f *HandlerFixture) TestOnlyTheMessagesThatFailAloneAreDeadLettered() {
	f.inner.action = func(_ context.Context, messages []any) {
		for _, m := range messages {
			if m != "a" {
				panic(errors.New("poison"))
			}
		}
	}
	f.handler().Handle(context.Background(), delivery("a"), delivery("bb"), delivery("ccc"))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq bb: the handler failed: poison", "q.dlq ccc: the handler failed: poison"})
}

func (f *HandlerFixture) TestASingleMessageFailingIsItsOwnFailure() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	f.handler().Handle(context.Background(), delivery("a"))
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler failed: poison"})
}

func (f *HandlerFixture) TestAnOutageDuringIsolationStopsIt() {
	f.inner.action = func(_ context.Context, messages []any) {
		if len(messages) == 1 && messages[0] == "bb" {
			panic(refused)
		}
		panic(errors.New("poison"))
	}
	value := recovered(func() { f.handler().Handle(context.Background(), delivery("a"), delivery("bb"), delivery("ccc")) })
	f.So(value, should.Equal, refused)
	f.So(f.inner.calls, should.HaveLength, 3) // the batch, a, bb; not ccc
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *HandlerFixture) TestAFailureDuringCancellationIsNotSetAsideNorHeld() {
	ctx, cancel := context.WithCancel(context.Background())
	f.inner.action = func(context.Context, []any) { cancel(); panic(refused) }
	value := recovered(func() { f.handler().Handle(ctx, delivery("a"), delivery("bb")) })
	f.So(value, should.Equal, refused)
	f.So(f.connector.dispatches(), should.BeEmpty)
	f.So(f.monitor.events, should.BeEmpty)
}

func (f *HandlerFixture) TestARetryForAnOutageSpendsNoAttemptAndIsNeverDeadLettered() {
	f.inner.action = func(ctx context.Context, messages []any) {
		for _, m := range messages {
			if err := messaging.Retry(ctx, m.(messaging.Delivery), refused); err != nil {
				panic(err)
			}
		}
	}
	tired := delivery("a")
	tired.Attempt = 5
	f.handler(Options.FullDelivery(true), Options.Policy(retrypolicy.Fixed(5, 0))).Handle(context.Background(), tired)
	published := f.connector.dispatches()
	f.So(published, should.HaveLength, 1)
	f.So(published[0].RoutingKey, should.Equal, "q")
	f.So(published[0].Attempt, should.Equal, 5)
}

func (f *HandlerFixture) TestTheReasonIsBoundedOnARuneBoundary() {
	huge := strings.Repeat("€", 100_000) // 300,000 bytes
	f.inner.action = func(context.Context, []any) { panic(errors.New(huge)) }
	f.handler().Handle(context.Background(), delivery("a"))
	published := f.connector.dispatches()
	f.So(published, should.HaveLength, 1)
	reason := published[0].Error
	f.So(len(reason), should.BeLessThanOrEqualTo, MaxReason)
	f.So(len(reason), should.BeGreaterThan, MaxReason-8)
	f.So(utf8.ValidString(reason), should.BeTrue)
	f.So(reason, should.StartWith, "the handler failed: €€€")
	f.So(reason, should.EndWith, fmt.Sprintf("[cut; %d bytes in all]", len("the handler failed: ")+len(huge)))
	f.So(bounded("short"), should.Equal, "short")
}

func (f *HandlerFixture) TestAnOverLongIdTravelsWholeOnAVerbatimCopy() {
	long := delivery(strings.Repeat("€", 100)) // 300 bytes
	long.CorrelationID = strings.Repeat("c", 300)
	long.MessageType = strings.Repeat("t", 300)
	long.Undecodable = errors.New("unknown type")
	f.handler().Handle(context.Background(), long)
	published := f.connector.dispatches()
	f.So(published, should.HaveLength, 1)
	f.So(published[0].MessageID, should.Equal, long.MessageID)
	f.So(published[0].CorrelationID, should.Equal, long.CorrelationID)
	f.So(published[0].MessageType, should.Equal, long.MessageType)
	f.So(published[0].Verbatim, should.BeTrue)
	f.So(published[0].Headers, should.Equal, long.Headers)
	f.So(wire.Check(published[0], 0), should.BeNil)
}

func (f *HandlerFixture) TestHeadersTooLargeForTheWireAreDroppedFromTheCopy() {
	big := delivery("a")
	big.Headers = map[string]any{"x-big-1": strings.Repeat("h", 60<<10), "x-big-2": strings.Repeat("h", 60<<10)}
	big.Undecodable = errors.New("unknown type")
	f.handler().Handle(context.Background(), big)
	published := f.connector.dispatches()
	f.So(published, should.HaveLength, 1)
	f.So(published[0].Headers, should.BeNil)
	f.So(published[0].Payload, should.Equal, big.Payload)
	f.So(published[0].MessageID, should.Equal, "a")
	f.So(published[0].Error, should.Equal, "could not be decoded: unknown type [set aside without its 2 application header(s), which did not fit the wire with it]")
	f.So(wire.Check(published[0], 0), should.BeNil)
	f.So(f.monitor.events, should.Equal, []string{"q parked " + published[0].Error})
}

func (f *HandlerFixture) TestACopyTheTransportRefusesIsReducedUntilItLands() {
	f.connector.refuse = 2
	poison := delivery("a")
	poison.Origin, poison.Claim = "svc", "claim"
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	f.handler().Handle(context.Background(), poison)
	published := f.connector.dispatches()
	f.So(published, should.HaveLength, 1)
	f.So(published[0].Headers, should.BeNil)
	f.So(published[0].Origin, should.BeEmpty)
	f.So(published[0].Claim, should.BeEmpty)
	f.So(published[0].Payload, should.Equal, poison.Payload)
	f.So(published[0].Error, should.EndWith, "nor its causation, origin, claim and route headers]")
	f.So(f.connector.connects, should.Equal, 1) // a refusal before sending keeps the connection
}

func (f *HandlerFixture) TestAnEnvelopeTooLargeForTheWireIsCutAsALastResort() {
	huge := delivery(strings.Repeat("i", 40<<10))
	huge.CorrelationID = strings.Repeat("c", 40<<10)
	huge.Undecodable = errors.New("unknown type")
	f.handler().Handle(context.Background(), huge)
	published := f.connector.dispatches()
	f.So(published, should.HaveLength, 1)
	f.So(published[0].MessageID, should.Equal, strings.Repeat("i", 255))
	f.So(published[0].CorrelationID, should.Equal, strings.Repeat("c", 255))
	f.So(published[0].Error, should.ContainSubstring, "with its id (40960 bytes), correlation id (40960 bytes) cut to 255 bytes")
	f.So(wire.Check(published[0], 0), should.BeNil)
}

func (f *HandlerFixture) TestACopyStillRefusedAfterEveryReductionIsNotAcknowledged() {
	f.connector.refuse = 4
	f.inner.action = func(context.Context, []any) { panic(errors.New("poison")) }
	value := recovered(func() { f.handler().Handle(context.Background(), delivery("a")) })
	err, _ := value.(error)
	f.So(errors.Is(err, messaging.ErrWireLimit), should.BeTrue)
	f.So(f.connector.dispatches(), should.BeEmpty)
}
