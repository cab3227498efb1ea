package streaming

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

func TestConsumerFixture(t *testing.T) {
	gunit.Run(new(ConsumerFixture), t)
}

type ConsumerFixture struct {
	*gunit.Fixture
	connector *fakeConnector
	streams   chan *fakeStream
	stream    *fakeStream
	handler   *fakeHandler
	monitor   *fakeMonitor
	logs      *testenv.LogBuffer
	consumer  messaging.ListenCloser
	listened  chan struct{}
	closeErr  error // what the last closeAsync's Close returned, once its channel is closed
}

// inBubble runs body in a synctest bubble, with fresh fakes made inside it
// (a goroutine blocked on a channel made outside the bubble would keep its
// clock from moving), and closes the consumer before the bubble ends.
func (f *ConsumerFixture) inBubble(body func()) {
	synctest.Test(f.T().(*testing.T), func(*testing.T) {
		f.setUp()
		body()
		f.tearDown()
	})
}

func (f *ConsumerFixture) setUp() {
	f.stream = newFakeStream()
	f.streams = make(chan *fakeStream, 10)
	f.streams <- f.stream
	f.connector = &fakeConnector{streamFor: func(string) (*fakeStream, error) {
		select {
		case stream := <-f.streams:
			return stream, nil
		default:
			return nil, errors.New("no stream scripted")
		}
	}}
	f.handler = newBlockingHandler()
	f.monitor = newFakeMonitor()
	f.logs = &testenv.LogBuffer{}
}

func (f *ConsumerFixture) tearDown() {
	if f.consumer != nil {
		receive(f.T(), f.closeAsync(), "Close to return at the end of the test")
		receive(f.T(), f.listened, "Listen to return at the end of the test")
	}
}

func (f *ConsumerFixture) listen(options ...SubscriptionOption) {
	f.listenAll(NewSubscription("q", append([]SubscriptionOption{
		SubscriptionOptions.AddWorkers(f.handler),
	}, options...)...))
}

func (f *ConsumerFixture) listenAll(subscriptions ...*Subscription) {
	f.consumer = New(f.connector,
		Options.Subscriptions(subscriptions...),
		Options.Monitor(f.monitor),
		Options.Logger(f.logs.Logger()),
	)
	f.listened = make(chan struct{})
	go func() {
		defer close(f.listened)
		f.consumer.Listen()
	}()
}

// closeWhileAHandlerAwaitsItsContext starts Close while a handler that
// returns only when its context ends holds a batch; it returns Close's
// channel and when it began.
func (f *ConsumerFixture) closeWhileAHandlerAwaitsItsContext() (chan struct{}, time.Time) {
	f.handler = &fakeHandler{awaitCtx: true, entered: make(chan int, 10)}
	f.listen()
	f.stream.push(delivery("1"))
	receive(f.T(), f.handler.entered, "the handler to start a batch")
	closed := f.closeAsync()
	eventually(f.T(), f.stream.readEnded)
	return closed, time.Now()
}

// aSessionEndedByAPanic runs a session whose handler (f.handler, set by the
// caller) panics on its first delivery, and returns the stream the next
// session reads and when the first one ended.
func (f *ConsumerFixture) aSessionEndedByAPanic() (*fakeStream, time.Time) {
	second := newFakeStream()
	f.streams <- second
	f.listen(SubscriptionOptions.ReconnectDelay(time.Second))
	f.stream.push(delivery("1"))
	return second, f.concluded()
}

// concluded waits until every goroutine of the bubble is blocked (a session
// that is ending has ended, and the runtime waits to reconnect), forgets the
// attempts to open heard so far, and returns the time.
func (f *ConsumerFixture) concluded() time.Time {
	synctest.Wait()
	for {
		select {
		case <-f.monitor.opens:
		default:
			return time.Now()
		}
	}
}

// reopened waits for the runtime's next attempt to open the stream and
// returns how long after since it came: the reconnect delay.
func (f *ConsumerFixture) reopened(since time.Time) time.Duration {
	return receive(f.T(), f.monitor.opens, "the runtime's next attempt to open the stream").Sub(since)
}

// closeAsync starts Close and returns a channel closed when it returns.
func (f *ConsumerFixture) closeAsync() chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.closeErr = f.consumer.Close()
	}()
	return done
}

func (f *ConsumerFixture) TestStreamConfigComesFromTheSubscriptionOptions() {
	f.inBubble(func() {
		f.listen(
			SubscriptionOptions.Name("consumer"),
			SubscriptionOptions.Topics("a", "b"),
			SubscriptionOptions.BufferCapacity(10),
			SubscriptionOptions.BatchCapacity(5),
			SubscriptionOptions.StreamReplication(true),
			SubscriptionOptions.Bindings(messaging.StreamBinding{Exchange: "orders", Kind: messaging.ExchangeTopic, Key: "order.*"}),
			SubscriptionOptions.QueueArguments(map[string]any{"x-single-active-consumer": true}),
			SubscriptionOptions.ConsumerArguments(map[string]any{"x-priority": int32(5)}),
		)
		eventually(f.T(), f.stream.waiting(0))
		f.So(f.connector.configs, should.Equal, []messaging.StreamConfig{{
			StreamName: "q", ConsumerName: "consumer", Topics: []string{"a", "b"},
			EstablishTopology: true, Replication: true, DeadLetters: true,
			BufferCapacity: 10, BatchCapacity: 5,
			Bindings:          []messaging.StreamBinding{{Exchange: "orders", Kind: messaging.ExchangeTopic, Key: "order.*"}},
			QueueArguments:    map[string]any{"x-single-active-consumer": true},
			ConsumerArguments: map[string]any{"x-priority": int32(5)},
		}})
	})
}

func (f *ConsumerFixture) TestDefaultsAndFullThrottle() {
	f.inBubble(func() {
		s := NewSubscription("q")
		f.So(s.bufferCapacity, should.Equal, 256)
		f.So(s.batchCapacity, should.Equal, 1)
		f.So(s.reconnectDelay, should.Equal, time.Second)
		f.So(s.strategy, should.Equal, ShutdownStrategyDrain)
		f.So(s.shutdownTimeout, should.Equal, 5*time.Second)
		f.So(s.establishTopology, should.BeTrue)
		f.So(s.deadLetters, should.BeTrue)

		s = NewSubscription("q", SubscriptionOptions.FullThrottle(),
			SubscriptionOptions.ReconnectDelay(-1), SubscriptionOptions.ShutdownStrategy(ShutdownStrategyCurrentBatch, 0),
			SubscriptionOptions.DeadLetters(false), SubscriptionOptions.EstablishTopology(false))
		f.So(s.bufferCapacity, should.Equal, 65535)
		f.So(s.batchCapacity, should.Equal, 65535)
		f.So(s.reconnectDelay, should.Equal, time.Second)
		f.So(s.shutdownTimeout, should.Equal, 5*time.Second)
		f.So(s.strategy, should.Equal, ShutdownStrategyCurrentBatch)
		f.So(s.deadLetters, should.BeFalse)
		f.So(s.establishTopology, should.BeFalse)
	})
}

func (f *ConsumerFixture) TestBatchesNeverWaitToFill() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(10))
		f.stream.push(delivery("1"))
		f.So(receive(f.T(), f.handler.entered, "the handler to start a batch"), should.Equal, 1)
		f.stream.push(delivery("2"), delivery("3"), delivery("4"))
		eventually(f.T(), f.stream.waiting(4))
		f.handler.release(f.T())
		f.So(receive(f.T(), f.handler.entered, "the handler to start a batch"), should.Equal, 2)
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 4 })

		f.So(f.handler.handled(), should.Equal, [][]any{{"1"}, {"2", "3", "4"}})
		// "1" was handled while more waited in the buffer: its ack joined theirs.
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1", "2", "3", "4"}})
	})
}

func (f *ConsumerFixture) TestABatchIsAcknowledgedWithinTheLingerWhenNothingElseComes() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(10))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.handler.release(f.T())
		synctest.Wait()
		f.So(f.stream.ackedFlat(), should.BeEmpty) // waiting for a next delivery to join it
		started := time.Now()
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 1 })
		f.So(time.Since(started), should.Equal, ackLinger)
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
	})
}

func (f *ConsumerFixture) TestADeliveryArrivingWithinTheLingerSharesTheAcknowledgement() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(10))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.handler.release(f.T())
		synctest.Wait()
		time.Sleep(ackLinger / 2) // advances the bubble's clock to within the linger
		f.stream.push(delivery("2"))
		receive(f.T(), f.handler.entered, "the handler to start the second batch")
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 2 })
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1", "2"}})
	})
}

// A delivery the worker waited longer than the linger for (a request and its
// reply, one at a time) is acknowledged as soon as it is handled: waiting for
// a next one would only delay the acknowledgement.
func (f *ConsumerFixture) TestADeliveryThatCameAfterALongWaitIsAcknowledgedAtOnce() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(10))
		synctest.Wait()
		time.Sleep(2 * ackLinger) // the bubble's clock: the worker has waited past the linger
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		started := time.Now()
		f.handler.release(f.T())
		synctest.Wait()
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		f.So(time.Since(started), should.Equal, time.Duration(0))

		// The next one comes at once after it: deliveries flow, and the
		// worker lingers again.
		f.stream.push(delivery("2"))
		receive(f.T(), f.handler.entered, "the handler to start the second batch")
		f.handler.release(f.T())
		synctest.Wait()
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 2 })
	})
}

func (f *ConsumerFixture) TestALingeringWorkerAcknowledgesAtOnceWhenTheConsumerCloses() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(10))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.handler.release(f.T())
		synctest.Wait()
		started := time.Now()
		f.So(f.consumer.Close(), should.BeNil)
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		f.So(time.Since(started), should.BeLessThan, ackLinger)
	})
}

func (f *ConsumerFixture) TestCoalescedAcknowledgementsAreBoundedByHalfThePrefetch() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(4), SubscriptionOptions.BatchCapacity(1))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.stream.push(delivery("2"), delivery("3"), delivery("4"))
		eventually(f.T(), f.stream.waiting(4))
		for range 3 {
			f.handler.release(f.T())
			receive(f.T(), f.handler.entered, "the handler to start a batch")
		}
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 4 })
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1", "2"}, {"3", "4"}})
	})
}

// A slow handler does not hold its finished work for half the prefetch: once
// the oldest handled delivery is ackHold old, what is held is acknowledged
// though more is buffered, so a lost connection redelivers little of it.
func (f *ConsumerFixture) TestHandledDeliveriesAreHeldAtMostAckHold() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(1))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.stream.push(delivery("2"), delivery("3"), delivery("4"))
		eventually(f.T(), f.stream.waiting(4))
		f.handler.release(f.T())
		receive(f.T(), f.handler.entered, "the handler to start the second batch")
		time.Sleep(ackHold) // the bubble's clock: the second batch takes ackHold
		f.handler.release(f.T())
		for range 2 {
			receive(f.T(), f.handler.entered, "the handler to start a batch")
			f.handler.release(f.T())
		}
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 4 })
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1", "2"}, {"3", "4"}})
	})
}

// A batch that took ackHold or longer is acknowledged as soon as it
// returns, though more is buffered: a slow handler gains nothing from
// sharing an acknowledgement, and a lost connection would redo it.
func (f *ConsumerFixture) TestASlowBatchIsAcknowledgedAtOnce() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(1))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.stream.push(delivery("2"))
		eventually(f.T(), f.stream.waiting(2))
		time.Sleep(ackHold) // the bubble's clock: the first batch takes ackHold
		f.handler.release(f.T())
		receive(f.T(), f.handler.entered, "the handler to start the second batch")
		synctest.Wait()
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 2 })
	})
}

func (f *ConsumerFixture) TestBatchCapacityLimitsTheBatch() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(2))
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.stream.push(delivery("2"), delivery("3"), delivery("4"))
		eventually(f.T(), f.stream.waiting(4))
		f.handler.release(f.T())
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.handler.release(f.T())
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedFlat()) == 4 })
		f.So(f.handler.handled(), should.Equal, [][]any{{"1"}, {"2", "3"}, {"4"}})
	})
}

func (f *ConsumerFixture) TestAcknowledgesOnlyAfterHandleReturns() {
	f.inBubble(func() {
		f.listen()
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		eventually(f.T(), f.stream.waiting(1))
		f.So(f.stream.ackedIDs(), should.BeEmpty)
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedIDs()) == 1 })
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
	})
}

func (f *ConsumerFixture) TestFullDeliveryToHandler() {
	f.inBubble(func() {
		f.handler = &fakeHandler{}
		f.listen(SubscriptionOptions.FullDeliveryToHandler(true))
		f.stream.push(delivery("1"))
		eventually(f.T(), func() bool { return len(f.stream.ackedIDs()) == 1 })
		f.So(f.handler.handled(), should.Equal, [][]any{{delivery("1")}})
	})
}

func (f *ConsumerFixture) TestFilteredDeliveriesAreAcknowledgedWithoutHandling() {
	f.inBubble(func() {
		f.handler = &fakeHandler{}
		filtered := delivery("filtered")
		filtered.Undecodable = errors.Join(errors.New("type x"), messaging.ErrFiltered)
		f.listen(SubscriptionOptions.BufferCapacity(10), SubscriptionOptions.BatchCapacity(10))
		f.stream.push(filtered)
		eventually(f.T(), func() bool { return len(f.stream.ackedIDs()) == 1 })
		f.So(f.handler.handled(), should.BeEmpty)
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"filtered"}})
	})
}

func (f *ConsumerFixture) TestMonitorAndLogsForALiveSession() {
	f.inBubble(func() {
		f.handler = &fakeHandler{}
		f.listen()
		f.stream.push(delivery("1"))
		eventually(f.T(), func() bool { return len(f.stream.ackedIDs()) == 1 })
		_ = f.consumer.Close()
		f.So(f.monitor.list(), should.Equal, []string{
			"opened q <nil>",
			"handled q 1",
			"acknowledged q 1 <nil>",
			"closed q",
		})
		f.So(f.stream.isClosed(), should.BeTrue)
		f.So(f.connector.connection(0).isClosed(), should.BeTrue)
	})
}

func (f *ConsumerFixture) TestDrainHandlesWhatIsBufferedThenStops() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(5))
		f.stream.push(delivery("1"), delivery("2"), delivery("3"), delivery("4"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		eventually(f.T(), f.stream.waiting(4))
		closed := f.closeAsync()
		eventually(f.T(), f.stream.readEnded)
		for range 3 {
			f.handler.release(f.T())
			receive(f.T(), f.handler.entered, "the handler to start a batch")
		}
		f.handler.release(f.T())
		receive(f.T(), closed, "Close to return")
		f.So(f.closeErr, should.BeNil)
		f.So(f.stream.ackedFlat(), should.Equal, []string{"1", "2", "3", "4"})
		f.So(f.monitor.list(), should.NotContain, "forced q")
	})
}

func (f *ConsumerFixture) TestCurrentBatchFinishesTheBatchInProgressOnly() {
	f.inBubble(func() {
		f.listen(SubscriptionOptions.BufferCapacity(5),
			SubscriptionOptions.ShutdownStrategy(ShutdownStrategyCurrentBatch, time.Second))
		f.stream.push(delivery("1"), delivery("2"), delivery("3"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		eventually(f.T(), f.stream.waiting(3))
		closed := f.closeAsync()
		eventually(f.T(), f.stream.readEnded)
		f.handler.release(f.T())
		receive(f.T(), closed, "Close to return")
		f.So(f.handler.handled(), should.Equal, [][]any{{"1"}})
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		f.So(f.monitor.list(), should.NotContain, "forced q")
	})
}

func (f *ConsumerFixture) TestImmediateCancelsTheHandlerAndStopsBeforeTheNextBatch() {
	f.inBubble(func() {
		f.handler = &fakeHandler{awaitCtx: true, entered: make(chan int, 10)}
		f.listen(SubscriptionOptions.BufferCapacity(5),
			SubscriptionOptions.ShutdownStrategy(ShutdownStrategyImmediate, 0))
		f.stream.push(delivery("1"), delivery("2"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		eventually(f.T(), f.stream.waiting(2))
		receive(f.T(), f.closeAsync(), "Close to return")
		f.So(f.handler.handled(), should.Equal, [][]any{{"1"}})
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		f.So(f.monitor.list(), should.NotContain, "forced q")
	})
}

func (f *ConsumerFixture) TestShutdownTimeoutCancelsTheHandlerAndReportsIt() {
	f.inBubble(func() {
		closed, began := f.closeWhileAHandlerAwaitsItsContext()
		time.Sleep(5*time.Second - time.Nanosecond) // the bubble's clock: passes at once
		synctest.Wait()
		f.So(f.handler.contexts[0].Err(), should.BeNil) // not before the shutdown timeout
		receive(f.T(), closed, "Close to return")
		f.So(time.Since(began), should.Equal, 5*time.Second)
		f.So(f.handler.contexts[0].Err(), should.Equal, context.Canceled)
		f.So(errors.Is(f.closeErr, messaging.ErrShutdownForced), should.BeTrue)
		f.So(f.closeErr.Error(), should.StartWith, `streaming: stream "q": handlers missed the shutdown timeout (5s)`)
		f.So(f.monitor.list(), should.Contain, "forced q")
		f.So(f.logs.String(), should.ContainSubstring,
			"Workers on stream [q] did not conclude within [5s] of shutdown; abandoning in-flight deliveries.")
	})
}

func (f *ConsumerFixture) TestABatchWhoseHandleReturnsAfterTheDeadlineIsStillAcknowledged() {
	f.inBubble(func() {
		// Like a settlement decorator that set the message aside (its publish
		// ignores cancellation) and returns: the copy exists, so the original must
		// be acknowledged, or the broker redelivers it and a second copy is made.
		closed, began := f.closeWhileAHandlerAwaitsItsContext()
		receive(f.T(), closed, "Close to return") // the handler returns when the deadline cancels it
		f.So(time.Since(began), should.Equal, 5*time.Second)
		f.So(f.stream.ackedIDs(), should.Equal, [][]string{{"1"}})
		f.So(f.monitor.list(), should.Contain, "acknowledged q 1 <nil>")
		f.So(f.monitor.list(), should.Contain, "forced q")
	})
}

func (f *ConsumerFixture) TestAHandlerThatIgnoresCancellationIsAbandonedAfterTheGrace() {
	f.inBubble(func() {
		f.listen()
		f.stream.push(delivery("1"))
		receive(f.T(), f.handler.entered, "the handler to start a batch")
		began := time.Now()
		closed := f.closeAsync()
		receive(f.T(), closed, "Close to return")
		f.So(time.Since(began), should.Equal, 5*time.Second+time.Second) // the shutdown timeout, then the grace
		f.So(f.logs.String(), should.ContainSubstring, "ignored its cancelled context")
		f.handler.release(f.T()) // the abandoned handler returns; its acknowledgement is refused
		eventually(f.T(), func() bool {
			return strings.Contains(strings.Join(f.monitor.list(), "\n"), "acknowledged q 1 context canceled")
		})
		f.So(f.stream.ackedIDs(), should.BeEmpty)
	})
}

func (f *ConsumerFixture) TestReconnectBacksOffToAboutTwoSecondsAndAHealthySessionStartsAgain() {
	f.inBubble(func() {
		refused := errors.New("refused")
		f.connector.connectErrs = []error{refused, refused, refused, refused}
		f.listen(SubscriptionOptions.ReconnectDelay(time.Second))
		delays := f.attemptsApart(4)
		f.jittered(delays[0], time.Second, 0)
		for _, delay := range delays[1:] {
			f.jittered(delay, 2*time.Second, 2*time.Second) // the ceiling: back within two seconds of the broker
		}
		// the fifth attempt connects; a healthy session starts the backoff again
		f.stream.push(delivery("1"))
		f.handler.release(f.T())
		eventually(f.T(), func() bool { return len(f.stream.ackedIDs()) == 1 })
		f.stream.fail(errors.New("connection reset"))
		f.jittered(f.reopened(f.concluded()), time.Second, 0)
		f.So(f.logs.String(), should.ContainSubstring, "Unable to open connection for stream [q] [open connection: refused]")
		f.So(f.logs.String(), should.ContainSubstring, "Stream [q] ended [connection reset]")
		f.So(f.logs.String(), should.ContainSubstring, "Subscription to stream [q] concluded; reconnecting in [")
		f.So(f.monitor.list()[0], should.Equal, "opened q open connection: refused")
		f.So(f.stream.isClosed(), should.BeTrue)
	})
}

func (f *ConsumerFixture) TestAStreamThatCannotOpenForAPermanentReasonBacksOffToThirtySeconds() {
	f.inBubble(func() {
		missing := fmt.Errorf("declare queue: %w", &messaging.BrokerError{Code: 404, Text: "NOT_FOUND - no queue 'q'"})
		f.connector.connectErrs = []error{missing, missing, missing, missing, missing, missing, missing}
		f.listen(SubscriptionOptions.ReconnectDelay(time.Second))
		delays := f.attemptsApart(7)
		for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second} {
			f.jittered(delays[i], want, 30*time.Second)
		}
	})
}

func (f *ConsumerFixture) TestAReconnectDelayAboveTheCeilingIsKept() {
	f.inBubble(func() {
		r := &runner{subscription: NewSubscription("q", SubscriptionOptions.ReconnectDelay(time.Minute))}
		for range 3 {
			f.jittered(r.nextDelay(false, errors.New("refused")), time.Minute, time.Minute)
		}
	})
}

func (f *ConsumerFixture) TestTheDefaultReconnectDelayIsASecond() {
	f.inBubble(func() {
		r := &runner{subscription: NewSubscription("q")}
		f.jittered(r.nextDelay(false, errors.New("refused")), time.Second, 0)
		f.jittered(r.nextDelay(false, errors.New("refused")), 2*time.Second, 2*time.Second)
		f.jittered(r.nextDelay(true, nil), time.Second, 0)
	})
}

// attemptsApart returns the time between the runtime's first n+1 attempts
// to open the stream.
func (f *ConsumerFixture) attemptsApart(n int) []time.Duration {
	var delays []time.Duration
	last := receive(f.T(), f.monitor.opens, "the first attempt")
	for range n {
		next := receive(f.T(), f.monitor.opens, "the next attempt")
		delays = append(delays, next.Sub(last))
		last = next
	}
	return delays
}

// jittered checks that got is want spread by the reconnect schedule's
// jitter (±20 %) and, when ceiling is set, not above it.
func (f *ConsumerFixture) jittered(got, want, ceiling time.Duration) {
	f.T().Helper()
	high := want * 12 / 10
	if ceiling > 0 {
		high = min(high, ceiling)
	}
	f.So(got, should.BeBetweenOrEqual, want*8/10, high)
}

func (f *ConsumerFixture) TestStreamOpenFailuresAreReportedAndRetried() {
	f.inBubble(func() {
		f.streams = make(chan *fakeStream) // nothing scripted: Stream fails
		f.listen(SubscriptionOptions.ReconnectDelay(time.Second))
		ended := f.concluded()
		f.So(f.monitor.list(), should.Equal, []string{"opened q open stream: no stream scripted"})
		f.So(f.logs.String(), should.ContainSubstring, "Unable to open stream [q] [open stream: no stream scripted]")
		f.So(f.connector.connection(0).isClosed(), should.BeTrue)
		f.jittered(f.reopened(ended), time.Second, 0)
	})
}

// The runtime's settlement cannot republish here (the fake connection opens
// no writer), and the stream cannot return one delivery to its queue, so the
// panic escapes it.
func (f *ConsumerFixture) TestAPanicThatEscapesTheSettlementIsNotAcknowledgedAndEndsTheSession() {
	f.inBubble(func() {
		f.connector.noRequeue = true
		f.handler = &fakeHandler{panicOn: func([]any) any { return "boom" }}
		second, ended := f.aSessionEndedByAPanic()
		f.So(f.stream.ackedIDs(), should.BeEmpty)
		f.So(f.stream.isClosed(), should.BeTrue)
		f.So(f.connector.connection(0).isClosed(), should.BeTrue)
		logs := f.logs.String()
		f.So(logs, should.NotContainSubstring, "Set aside message")
		f.So(logs, should.ContainSubstring, "Handler on stream [q] panicked [deadletter: the settlement of 1 delivery(ies) (1) could not be completed")
		f.So(logs, should.ContainSubstring, "level=ERROR")
		f.So(logs, should.ContainSubstring, "stack=")
		f.So(f.monitor.list(), should.Equal, []string{"opened q <nil>", "handled q 1", "closed q"})

		f.handler.panicOn = nil
		f.jittered(f.reopened(ended), time.Second, 0)
		second.push(delivery("1"))
		eventually(f.T(), func() bool { return len(second.ackedIDs()) == 1 })
	})
}

func (f *ConsumerFixture) TestAFailedAcknowledgementEndsTheSession() {
	f.inBubble(func() {
		f.handler = &fakeHandler{}
		f.stream.ackErr = errors.New("channel closed")
		f.listen()
		f.stream.push(delivery("1"))
		synctest.Wait()
		time.Sleep(ackLinger) // advances the bubble's clock to the acknowledgement
		f.concluded()
		f.So(f.monitor.list(), should.Equal, []string{"opened q <nil>", "handled q 1", "acknowledged q 1 channel closed", "closed q"})
		f.So(f.logs.String(), should.ContainSubstring,
			"Unable to acknowledge [1] delivery(ies) from stream [q] [channel closed]; the broker will redeliver them.")
	})
}

func (f *ConsumerFixture) TestAFailureInOneSubscriptionDoesNotTouchAnother() {
	f.inBubble(func() {
		streams := map[string][]*fakeStream{
			"a": {newFakeStream(), newFakeStream()},
			"b": {newFakeStream()},
		}
		opened := map[string]int{}
		f.connector.streamFor = func(queue string) (*fakeStream, error) {
			stream := streams[queue][opened[queue]]
			opened[queue]++
			return stream, nil
		}
		handlerA, handlerB := &fakeHandler{}, &fakeHandler{}
		f.listenAll(
			NewSubscription("a", SubscriptionOptions.AddWorkers(handlerA)),
			NewSubscription("b", SubscriptionOptions.AddWorkers(handlerB)),
		)
		eventually(f.T(), streams["a"][0].waiting(0))
		eventually(f.T(), streams["b"][0].waiting(0))
		f.So(f.connector.connectionCount(), should.Equal, 2)

		streams["a"][0].fail(errors.New("channel closed by broker"))
		f.reopened(f.concluded())
		eventually(f.T(), streams["a"][1].waiting(0))

		f.So(f.connector.connectionCount(), should.Equal, 3)
		f.So(streams["b"][0].isClosed(), should.BeFalse)
		closedConnections := 0
		for _, connection := range f.connector.opened() {
			if connection.isClosed() {
				closedConnections++
			}
		}
		f.So(closedConnections, should.Equal, 1)
		streams["b"][0].push(delivery("b1"))
		eventually(f.T(), func() bool { return len(streams["b"][0].ackedIDs()) == 1 })
		f.So(strings.Count(strings.Join(f.monitor.list(), "\n"), "opened b"), should.Equal, 1)
	})
}

func (f *ConsumerFixture) TestCloseBeforeListenAndTwice() {
	f.inBubble(func() {
		consumer := New(f.connector, Options.Subscriptions(NewSubscription("q", SubscriptionOptions.AddWorkers(f.handler))))
		f.So(consumer.Close(), should.BeNil)
		consumer.Listen() // returns at once
		f.So(consumer.Close(), should.BeNil)
		f.So(f.connector.connectionCount(), should.Equal, 0)
	})
}

func (f *ConsumerFixture) TestParentContextEndsListen() {
	f.inBubble(func() {
		ctx, cancel := context.WithCancel(context.Background())
		consumer := New(f.connector, Options.Context(ctx),
			Options.Subscriptions(NewSubscription("q", SubscriptionOptions.AddWorkers(&fakeHandler{}))))
		done := make(chan struct{})
		go func() {
			defer close(done)
			consumer.Listen()
		}()
		eventually(f.T(), f.stream.waiting(0))
		cancel()
		receive(f.T(), done, "Listen to return")
		f.So(f.stream.isClosed(), should.BeTrue)
	})
}
