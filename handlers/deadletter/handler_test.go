package deadletter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
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
	connector *fakeConnector
	inner     *fakeInner
	monitor   *fakeMonitor
}

func (f *HandlerFixture) Setup() {
	f.connector = &fakeConnector{}
	f.inner = &fakeInner{}
	f.monitor = &fakeMonitor{}
}

func (f *HandlerFixture) handler(options ...Option) messaging.Handler {
	return New(f.connector, f.inner, append([]Option{
		Options.Monitor(f.monitor),
	}, options...)...)
}

func panicsWith(text string) func() any {
	return func() any { panic(errors.New(text)) }
}

func (f *HandlerFixture) TestAValueThatIsNotADeliveryIsAWiringMistake() {
	value := recovered(func() { f.handler().Handle(context.Background(), "plain message") })
	f.So(value, should.ContainSubstring, "the context carries no envelopes")
	f.So(f.inner.calls, should.BeEmpty)
}

func (f *HandlerFixture) TestDecodedValuesAreSettledByTheEnvelopesInTheContext() {
	f.inner.action = func(ctx context.Context, messages []any) {
		if envelopes := messaging.DeliveriesFrom(ctx); len(envelopes) != len(messages) {
			panic("the inner handler got no envelopes")
		}
		if slices.Contains(messages, any("bb")) {
			panic(errors.New("poison"))
		}
	}
	ctx := messaging.WithDeliveries(context.Background(), []messaging.Delivery{delivery("a"), delivery("bb")})
	f.handler().Handle(ctx, "a", "bb")
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq bb: the handler failed: poison"})
	f.So(f.inner.calls, should.Equal, [][]any{{"a", "bb"}, {"a"}, {"bb"}})
}

func (f *HandlerFixture) TestHandledBatchIsAcceptedAndPassesMessages() {
	f.handler().Handle(context.Background(), delivery("a"), delivery("bb"))
	f.So(f.inner.calls, should.Equal, [][]any{{"a", "bb"}})
	f.So(f.connector.dispatches(), should.BeEmpty)
	f.So(f.connector.connects, should.Equal, 0)
	f.So(f.monitor.events, should.Equal, []string{"q accepted ", "q accepted "})
}

func (f *HandlerFixture) TestFullDeliveryPassesDeliveries() {
	f.handler(Options.FullDelivery(true)).Handle(context.Background(), delivery("a"))
	f.So(f.inner.calls, should.Equal, [][]any{{delivery("a")}})
}

func (f *HandlerFixture) TestUndecodableIsParkedBeforeTheHandlerRuns() {
	bad := delivery("bad")
	bad.Undecodable = errors.New("invalid character 'x'")
	f.handler().Handle(context.Background(), delivery("a"), bad)
	f.So(f.inner.calls, should.Equal, [][]any{{"a"}})
	f.So(f.connector.targets(), should.Equal, []string{"q.parked bad: could not be decoded: invalid character 'x'"})
	f.So(f.monitor.events, should.Equal, []string{"q parked could not be decoded: invalid character 'x'", "q accepted "})
}

func (f *HandlerFixture) TestSetAsideCopyIsTheOriginalMessage() {
	bad := delivery("bad")
	bad.Undecodable = errors.New("nope")
	bad.CorrelationID = "corr"
	f.handler().Handle(context.Background(), bad)
	expected := bad.Redispatch("q.parked")
	expected.Error = "could not be decoded: nope"
	f.So(f.connector.dispatches(), should.Equal, []messaging.Dispatch{expected})
	f.So(expected.Mandatory, should.BeTrue)
	f.So(expected.Topic, should.Equal, "")
	f.So(string(expected.Payload), should.Equal, `{"id":"bad"}`)
}

func (f *HandlerFixture) TestADecodersOwnWordingIsNotPrefixedTwice() {
	bad := delivery("bad")
	bad.Undecodable = errors.New("could not be decoded: message type \"x\" is not registered")
	f.handler().Handle(context.Background(), bad)
	f.So(f.connector.targets(), should.Equal, []string{`q.parked bad: could not be decoded: message type "x" is not registered`})
}

func (f *HandlerFixture) TestFilteredIsNeitherHandledNorParked() {
	filtered := delivery("f")
	filtered.Undecodable = fmt.Errorf("type x: %w", messaging.ErrFiltered)
	f.handler().Handle(context.Background(), filtered)
	f.So(f.inner.calls, should.BeEmpty)
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *HandlerFixture) TestReasonWording() {
	cases := []struct {
		options []Option
		value   any
		reason  string
	}{
		{[]Option{Options.Policy(retrypolicy.Fixed(3, 0))}, errors.New("boom"), "exhausted 3 attempts: boom"},
		{[]Option{Options.Policy(retrypolicy.Fixed(1, 0))}, errors.New("boom"), "exhausted 1 attempt: boom"},
		{nil, errors.New("boom"), "the handler failed: boom"},
		{nil, "plain text", "the handler failed: plain text"},
		{[]Option{Options.Policy(retrypolicy.Fixed(3, 0))}, messaging.Fatalf("bad %d", 7), "the handler reported an unprocessable message: bad 7"},
		{nil, fmt.Errorf("wrapped: %w", messaging.Fatal(errors.New("bad"))), "the handler reported an unprocessable message: wrapped: bad"},
	}
	for _, c := range cases {
		connector := &fakeConnector{}
		value := c.value
		inner := messaging.HandlerFunc(func(context.Context, ...any) { panic(value) })
		New(connector, inner, c.options...).Handle(context.Background(), delivery("a"))
		f.So(connector.targets(), should.Equal, []string{"q.dlq a: " + c.reason})
	}
	f.So(rejected(nil), should.Equal, "no reason given")
}

func (f *HandlerFixture) TestASingleMessageBatchIsSetAsideWithoutASecondRun() {
	f.inner.action = func(context.Context, []any) { panic(errors.New("boom")) }
	f.handler(Options.Policy(retrypolicy.Fixed(2, 0))).Handle(context.Background(), delivery("a"))
	f.So(len(f.inner.calls), should.Equal, 1)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: exhausted 2 attempts: boom"})
	f.So(f.monitor.events, should.Equal, []string{"q dead_lettered exhausted 2 attempts: boom"})
}

func (f *HandlerFixture) TestACopySetAsideAfterInProcessRetriesCarriesTheAttemptsTheReasonNames() {
	cases := []struct {
		options []Option
		value   any
		attempt int
		reason  string
	}{
		{[]Option{Options.Policy(retrypolicy.Fixed(3, 0))}, errors.New("boom"), 3, "exhausted 3 attempts: boom"},
		{[]Option{Options.Policy(retrypolicy.Fixed(4, time.Second))}, errors.New("boom"), 4, "exhausted 4 attempts: boom"},
		{nil, errors.New("boom"), 1, "the handler failed: boom"},
		{[]Option{Options.Policy(retrypolicy.Fixed(3, 0))}, messaging.Fatalf("bad"), 1, "the handler reported an unprocessable message: bad"},
	}
	for _, c := range cases {
		connector := &fakeConnector{}
		value := c.value
		inner := messaging.HandlerFunc(func(context.Context, ...any) { panic(value) })
		New(connector, inner, c.options...).Handle(context.Background(), delivery("a"))
		f.So(connector.targets(), should.Equal, []string{"q.dlq a: " + c.reason})
		f.So(connector.dispatches()[0].Attempt, should.Equal, c.attempt)
	}
	// A redelivered message keeps its own count when it is the higher.
	later := delivery("a")
	later.Attempt = 5
	f.inner.action = func(context.Context, []any) { panic(errors.New("boom")) }
	f.handler(Options.Policy(retrypolicy.Fixed(3, 0))).Handle(context.Background(), later)
	f.So(f.connector.dispatches()[0].Attempt, should.Equal, 5)
}

func (f *HandlerFixture) TestPoisonIsIsolatedFromItsNeighbours() {
	f.inner.action = func(_ context.Context, messages []any) {
		for _, m := range messages {
			if m == "poison" {
				panic(errors.New("cannot handle poison"))
			}
		}
	}
	f.handler().Handle(context.Background(), delivery("a"), delivery("poison"), delivery("c"))
	f.So(f.inner.calls, should.Equal, [][]any{{"a", "poison", "c"}, {"a"}, {"poison"}, {"c"}})
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq poison: the handler failed: cannot handle poison"})
	f.So(f.monitor.events, should.Equal, []string{
		"q dead_lettered the handler failed: cannot handle poison", "q accepted ", "q accepted ",
	})
}

func (f *HandlerFixture) TestAFailedRepublishPanicsSoTheBatchIsNotAcknowledged() {
	f.connector.commitErr = fmt.Errorf("commit: %w", messaging.ErrUnroutable)
	f.inner.action = func(context.Context, []any) { panic(errors.New("boom")) }
	handler := f.handler()
	value := recovered(func() { handler.Handle(context.Background(), delivery("a")) })
	err, isError := value.(error)
	f.So(isError, should.BeTrue)
	f.So(errors.Is(err, messaging.ErrUnroutable), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "not acknowledged")
	f.So(f.monitor.events[0], should.StartWith, "q set_aside_failed ")

	f.connector.commitErr = nil // the next attempt lands, on the same connection: a verdict on a message leaves it sound
	handler.Handle(context.Background(), delivery("a"))
	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.connections[0].closed, should.BeFalse)
	f.So(f.connector.targets(), should.Equal, []string{"q.dlq a: the handler failed: boom"})
}

func (f *HandlerFixture) TestAFailedConnectPanics() {
	f.connector.connectErr = errors.New("refused")
	bad := delivery("bad")
	bad.Undecodable = errors.New("nope")
	value := recovered(func() { f.handler().Handle(context.Background(), bad) })
	f.So(fmt.Sprint(value), should.ContainSubstring, "refused")
}

func (f *HandlerFixture) TestTheSetAsidePublishIgnoresTheHandlersCancellation() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	bad := delivery("bad")
	bad.Undecodable = errors.New("nope")
	f.handler(Options.PublishTimeout(time.Minute)).Handle(ctx, bad)
	f.So(f.connector.targets(), should.Equal, []string{"q.parked bad: could not be decoded: nope"})
	deadline, ok := f.connector.contexts[0].Deadline()
	f.So(ok, should.BeTrue)
	f.So(time.Until(deadline), should.BeBetween, 50*time.Second, time.Minute+time.Second)
}

func (f *HandlerFixture) TestAFailureDuringShutdownIsReraisedNotSetAside() {
	ctx, cancel := context.WithCancel(context.Background())
	f.inner.action = func(context.Context, []any) { cancel(); panic(context.Canceled) }
	value := recovered(func() { f.handler().Handle(ctx, delivery("a"), delivery("bb")) })
	f.So(value, should.Equal, context.Canceled)
	f.So(len(f.inner.calls), should.Equal, 1)
	f.So(f.connector.dispatches(), should.BeEmpty)
}

func (f *HandlerFixture) TestDeadLetteredAndParkedCopiesHaveNoTTL() {
	poison := delivery("a")
	poison.Expiration = 5 * time.Second
	bad := delivery("bad")
	bad.Undecodable = errors.New("nope")
	bad.Expiration = 5 * time.Second
	f.inner.action = func(context.Context, []any) { panic(errors.New("boom")) }
	f.handler().Handle(context.Background(), poison, bad)
	dispatches := f.connector.dispatches()
	f.So(len(dispatches), should.Equal, 2)
	for _, d := range dispatches {
		f.So(d.Expiration, should.Equal, time.Duration(0))
	}
}
