package streaming

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/smarty/assertions/should"

	"github.com/warrenmq/messaging"
)

var databaseDown = messaging.Outage(errors.New("dial tcp 127.0.0.1:3306: connect: connection refused password=hunter2"))

// outageHandler stands in for handlers/retry holding a batch through an
// outage: it reports the wait through the context and blocks until released
// or cancelled.
type outageHandler struct {
	entered chan struct{}
	release chan struct{}
	ended   chan error
}

func newOutageHandler() *outageHandler {
	return &outageHandler{entered: make(chan struct{}, 10), release: make(chan struct{}), ended: make(chan error, 10)}
}

func (h *outageHandler) Handle(ctx context.Context, _ ...any) {
	listener := messaging.OutageListenerFrom(ctx)
	listener.Waiting(databaseDown, time.Second)
	h.entered <- struct{}{}
	defer listener.Resumed()
	select {
	case <-h.release:
		h.ended <- nil
	case <-ctx.Done():
		h.ended <- ctx.Err()
		panic(fmt.Errorf("stopped waiting: %w", ctx.Err()))
	}
}

func (f *ConsumerFixture) waiting() []Outage { return f.consumer.(*Consumer).Waiting() }

func (f *ConsumerFixture) TestAWorkerHoldingItsBatchThroughAnOutageIsReported() {
	f.inBubble(func() {
		held := newOutageHandler()
		f.listenAll(NewSubscription("q", SubscriptionOptions.AddWorkers(held)))
		f.So(f.consumer.(*Consumer).Health(), should.BeNil)
		f.stream.push(delivery("1"))
		receive(f.T(), held.entered, "the handler to hold its batch")

		waiting := f.waiting()
		f.So(waiting, should.HaveLength, 1)
		f.So(waiting[0].Stream, should.Equal, "q")
		f.So(waiting[0].Since, should.Equal, time.Now())
		f.So(waiting[0].Cause, should.ContainSubstring, "connection refused")
		f.So(waiting[0].Cause, should.NotContainSubstring, "hunter2")
		health := f.consumer.(*Consumer).Health()
		f.So(errors.Is(health, ErrWaitingOnOutage), should.BeTrue)
		f.So(health.Error(), should.ContainSubstring, "stream q waiting since 2000-01-01T00:00:00Z")
		f.So(f.monitor.list(), should.Contain, "outage started q "+databaseDown.Error())
		f.So(f.logs.String(), should.ContainSubstring, "Subscription to stream [q] is waiting on an outage")
		f.So(f.stream.ackedIDs(), should.BeEmpty)

		send(f.T(), held.release, struct{}{}, "the handler to be released")
		eventually(f.T(), func() bool { return len(f.stream.ackedIDs()) == 1 })
		f.So(f.waiting(), should.BeEmpty)
		f.So(f.consumer.(*Consumer).Health(), should.BeNil)
		f.So(f.monitor.list(), should.Contain, "outage ended q")
	})
}

func (f *ConsumerFixture) TestCloseEndsAnOutageWaitAtOnceAndLeavesTheBatchUnacknowledged() {
	f.inBubble(func() {
		held := newOutageHandler()
		f.listenAll(NewSubscription("q", SubscriptionOptions.AddWorkers(held),
			SubscriptionOptions.ShutdownStrategy(ShutdownStrategyDrain, time.Hour)))
		f.stream.push(delivery("1"))
		receive(f.T(), held.entered, "the handler to hold its batch")

		closed := f.closeAsync()
		f.So(errors.Is(receive(f.T(), held.ended, "the wait to be cancelled"), context.Canceled), should.BeTrue)
		receive(f.T(), closed, "Close to return without the hour's shutdown timeout")
		receive(f.T(), f.listened, "Listen to return")
		f.consumer = nil // closed here, not in Teardown
		f.So(f.stream.ackedIDs(), should.BeEmpty)
		f.So(f.monitor.list(), should.NotContain, "forced q")
		f.So(f.monitor.list(), should.Contain, "outage ended q")
		f.So((&Consumer{}).Waiting(), should.BeEmpty)
	})
}

func (f *ConsumerFixture) TestAnOutagePanicHoldsTheSubscriptionUntilABatchIsHandled() {
	f.inBubble(func() {
		f.handler = &fakeHandler{panicOn: func([]any) any { return databaseDown }}
		second, ended := f.aSessionEndedByAPanic()
		f.So(f.stream.ackedIDs(), should.BeEmpty)
		f.So(f.waiting(), should.HaveLength, 1)
		logs := f.logs.String()
		f.So(logs, should.ContainSubstring, "Handler on stream [q] failed with an outage")
		f.So(logs, should.NotContainSubstring, "level=ERROR")
		f.So(logs, should.NotContainSubstring, "stack=")

		f.handler.panicOn = nil // read by the next session, which starts after the delay
		f.jittered(f.reopened(ended), time.Second, 0)
		second.push(delivery("1"))
		eventually(f.T(), func() bool { return len(second.ackedIDs()) == 1 })
		f.So(f.waiting(), should.BeEmpty)
		f.So(f.monitor.list(), should.Contain, "outage ended q")
	})
}

func (f *ConsumerFixture) TestAnOrdinaryPanicIsNotAnOutage() {
	f.inBubble(func() {
		f.connector.noRequeue = true // the failed set-aside ends the session
		f.handler = &fakeHandler{panicOn: func([]any) any { return errors.New("nil pointer") }}
		f.listen()
		f.stream.push(delivery("1"))
		f.concluded()
		f.So(f.waiting(), should.BeEmpty)
		f.So(f.logs.String(), should.ContainSubstring, "level=ERROR")
	})
}

func (f *ConsumerFixture) TestALostStreamCancelsAWorkerHeldThroughAnOutageSoTheNextSessionStarts() {
	f.inBubble(func() {
		held := newOutageHandler()
		second := newFakeStream()
		f.streams <- second
		f.listenAll(NewSubscription("q", SubscriptionOptions.AddWorkers(held),
			SubscriptionOptions.ReconnectDelay(time.Second)))
		f.stream.push(delivery("1"))
		receive(f.T(), held.entered, "the handler to hold its batch")
		f.So(f.waiting(), should.HaveLength, 1)

		f.stream.fail(errors.New("connection reset by peer"))
		// Without the cancellation the session would wait for the outage to end
		// before it could reconnect, holding a batch nobody can acknowledge.
		f.So(errors.Is(receive(f.T(), held.ended, "the held worker to be cancelled"), context.Canceled), should.BeTrue)
		f.So(f.stream.ackedIDs(), should.BeEmpty)
		f.So(f.waiting(), should.BeEmpty)
		f.reopened(f.concluded())
		second.push(delivery("1"))
		receive(f.T(), held.entered, "the redelivery to reach the handler")
		send(f.T(), held.release, struct{}{}, "the handler to be released")
		eventually(f.T(), func() bool { return len(second.ackedIDs()) == 1 })
	})
}
