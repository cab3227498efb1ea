package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	"github.com/warrenmq/messaging"
)

func TestStreamFixture(t *testing.T) {
	gunit.Run(new(StreamFixture), t)
}

type StreamFixture struct {
	*gunit.Fixture
	*world
	conn messaging.Connection
}

func (f *StreamFixture) Setup() {
	f.world = newWorld(f.Fixture)
	f.conn = f.connect()
}
func (f *StreamFixture) Teardown() { f.world.close() }

func (f *StreamFixture) open(queue string, prefetch uint16) messaging.Stream {
	s, err := f.stream(f.conn, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, BufferCapacity: prefetch})
	f.So(err, should.BeNil)
	return s
}

// readLater starts a Read and returns where its outcome arrives.
func (f *StreamFixture) readLater(ctx context.Context, s messaging.Stream) <-chan error {
	done := make(chan error, 1)
	go func() {
		var d messaging.Delivery
		done <- s.Read(ctx, &d)
	}()
	return done
}

func (f *StreamFixture) outcome(done <-chan error) error {
	select {
	case err := <-done:
		return err
	case <-f.ctx.Done():
		return errors.New("the read did not return")
	}
}

func (f *StreamFixture) TestReadBlocksUntilAMessageIsPublished() {
	s := f.open("q", 1)
	done := f.readLater(f.ctx, s)
	f.awaitBlockedReads(f.broker, 1)
	f.publish("q", "1")
	f.So(f.outcome(done), should.BeNil)
}

func (f *StreamFixture) TestReadReturnsWhenItsContextEnds() {
	s := f.open("q", 1)
	ctx, cancel := context.WithCancel(f.ctx)
	done := f.readLater(ctx, s)
	f.awaitBlockedReads(f.broker, 1)
	cancel()
	f.So(f.outcome(done), should.Equal, context.Canceled)
}

func (f *StreamFixture) TestReadReturnsClosedWhenTheStreamOrConnectionCloses() {
	s := f.open("q", 1)
	done := f.readLater(f.ctx, s)
	f.awaitBlockedReads(f.broker, 1)
	f.So(s.Close(), should.BeNil)
	f.So(f.outcome(done), should.Wrap, messaging.ErrClosed)

	other := f.open("q", 1)
	done = f.readLater(f.ctx, other)
	f.awaitBlockedReads(f.broker, 1)
	f.So(f.conn.Close(), should.BeNil)
	f.So(f.outcome(done), should.Wrap, messaging.ErrClosed)
	f.So(other.Acknowledge(f.ctx, messaging.Delivery{DeliveryID: 1}), should.Wrap, messaging.ErrClosed)
}

func (f *StreamFixture) TestReadEndsWhenTheQueueIsDeleted() {
	s := f.open("q", 1)
	done := f.readLater(f.ctx, s)
	f.awaitBlockedReads(f.broker, 1)
	f.So(f.broker.DeleteQueue("q"), should.BeNil)
	err := f.outcome(done)
	f.So(err, should.Wrap, messaging.ErrClosed)
	f.So(err, errorContains, "deleted")
}

func (f *StreamFixture) TestPrefetchBoundsUnacknowledgedDeliveries() {
	s := f.open("q", 2)
	f.publish("q", "1", "2", "3")
	first, _ := f.read(s), f.read(s)

	done := f.readLater(f.ctx, s)
	f.awaitBlockedReads(f.broker, 1)
	f.So(f.broker.MessageCount("q"), should.Equal, 1) // the blocked read holds nothing
	f.So(s.Acknowledge(f.ctx, first), should.BeNil)
	f.So(f.outcome(done), should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 0)
}

func (f *StreamFixture) TestAZeroBufferCapacityMeansAPrefetchOfOne() {
	s := f.open("q", 0)
	f.publish("q", "1", "2")
	d := f.read(s)
	ctx, cancel := context.WithCancel(f.ctx)
	done := f.readLater(ctx, s)
	f.awaitBlockedReads(f.broker, 1)
	f.So(f.broker.MessageCount("q"), should.Equal, 1)
	cancel()
	f.So(f.outcome(done), should.Equal, context.Canceled)
	f.So(s.Acknowledge(f.ctx, d), should.BeNil)
	f.So(string(f.read(s).Payload), should.Equal, "2")
}

func (f *StreamFixture) TestUnacknowledgedDeliveriesReturnToTheFrontInOrderMarkedRedelivered() {
	s := f.open("q", 3)
	f.publish("q", "1", "2", "3", "4", "5")
	one, two, three := f.read(s), f.read(s), f.read(s)
	f.So(s.Acknowledge(f.ctx, two), should.BeNil)
	f.So([]uint64{one.DeliveryID, two.DeliveryID, three.DeliveryID}, should.Equal, []uint64{1, 2, 3})
	f.So(s.Close(), should.BeNil)

	again := f.open("q", 10)
	var got []messaging.Delivery
	for range 4 {
		got = append(got, f.read(again))
	}
	f.So(payloads(got...), should.Equal, []string{"1", "3", "4", "5"})
	f.So([]bool{got[0].Redelivered, got[1].Redelivered, got[2].Redelivered, got[3].Redelivered}, should.Equal, []bool{true, true, false, false})
	f.So(got[0].DeliveryID, should.Equal, 1) // tags are per stream
	f.So(f.monitor.Calls(), should.Contain, "requeued q 2")
	f.So(f.monitor.Calls(), should.Contain, "acknowledged q 1")
}

func (f *StreamFixture) TestClosingTheBrokerRequeuesAndRefusesNewConnections() {
	s := f.open("q", 2)
	f.publish("q", "1")
	f.read(s)
	f.So(f.broker.Close(), should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 1)
	_, err := f.broker.Connect(f.ctx)
	f.So(err, should.Wrap, messaging.ErrClosed)
	_, err = f.conn.Reader(f.ctx)
	f.So(err, should.Wrap, messaging.ErrClosed)
}

func (f *StreamFixture) TestAcknowledgingAnUnknownDeliveryFailsAndAcknowledgesNone() {
	s := f.open("q", 3)
	f.publish("q", "1", "2")
	one, two := f.read(s), f.read(s)
	f.So(s.Acknowledge(f.ctx, one, one), should.BeNil) // listed twice, counted once
	f.So(f.monitor.Calls(), should.Contain, "acknowledged q 1")

	err := s.Acknowledge(f.ctx, two, one)
	f.So(err, errorContains, "delivery 1 is not awaiting acknowledgement")
	f.So(err, errorContains, "nothing was acknowledged")
	f.So(s.Close(), should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 1) // two was not acknowledged, so it came back
}

func (f *StreamFixture) TestAcknowledgingNothingOrAfterTheContextEndedDoesNothing() {
	s := f.open("q", 1)
	f.publish("q", "1")
	d := f.read(s)
	f.So(s.Acknowledge(f.ctx), should.BeNil)
	ctx, cancel := context.WithCancel(f.ctx)
	cancel()
	f.So(s.Acknowledge(ctx, d), should.Wrap, context.Canceled)
	f.So(s.Acknowledge(f.ctx, d), should.BeNil)
}

func (f *StreamFixture) TestConsumingAnUndeclaredQueueFailsNotFound() {
	_, err := f.stream(f.conn, messaging.StreamConfig{StreamName: "missing"})
	f.So(err, should.Wrap, messaging.ErrNotFound)
	_, err = f.stream(f.conn, messaging.StreamConfig{})
	f.So(err, should.NotBeNil)
}

func (f *StreamFixture) TestEstablishTopologyBindsTheQueueToAFanoutExchangePerTopic() {
	_, err := f.stream(f.conn, messaging.StreamConfig{StreamName: "q", Topics: []string{"a", "b"}, EstablishTopology: true, Replication: true})
	f.So(err, should.BeNil)
	f.So(f.broker.DeclareExchange("a", KindFanout, true), should.BeNil)
	f.So(f.broker.DeclareQueue("q", QueueOptions{Durable: true, Arguments: map[string]any{"x-queue-type": "quorum"}}), should.BeNil)
	f.So(f.broker.Publish(f.ctx, ctxDispatch("a", "k1")), should.BeNil)
	f.So(f.broker.Publish(f.ctx, ctxDispatch("b", "k2")), should.BeNil)
	f.So(f.broker.MessageCount("q"), should.Equal, 2)

	// A classic redeclaration of the quorum queue uses what exists, as on RabbitMQ.
	_, err = f.stream(f.conn, messaging.StreamConfig{StreamName: "q", EstablishTopology: true})
	f.So(err, should.BeNil)
	f.So(f.broker.DeclareQueue("q", QueueOptions{Durable: true, Arguments: map[string]any{"x-queue-type": "quorum"}}), should.BeNil)
}

func (f *StreamFixture) TestDeadLettersDeclaresTheSettlementTopology() {
	_, err := f.stream(f.conn, messaging.StreamConfig{StreamName: "orders", EstablishTopology: true, DeadLetters: true})
	f.So(err, should.BeNil)
	f.So(f.broker.DeclareExchange("acemq.dlx", KindDirect, true), should.BeNil)
	f.So(f.broker.DeclareQueue("orders.dlq", QueueOptions{Durable: true}), should.BeNil)
	f.So(f.broker.DeclareQueue("orders.parked", QueueOptions{Durable: true}), should.BeNil)

	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "acemq.dlx", RoutingKey: "orders.dlq", Mandatory: true}), should.BeNil)
	f.So(f.broker.Publish(f.ctx, messaging.Dispatch{Topic: "acemq.dlx", RoutingKey: "orders.parked", Mandatory: true}), should.BeNil)
	f.So(f.broker.MessageCount("orders.dlq"), should.Equal, 1)
	f.So(f.broker.MessageCount("orders.parked"), should.Equal, 1)
}

func (f *StreamFixture) TestWithoutEstablishTopologyNothingIsDeclared() {
	_, err := f.stream(f.conn, messaging.StreamConfig{StreamName: "q", Topics: []string{"a"}})
	f.So(err, should.Wrap, messaging.ErrNotFound)
	f.So(f.broker.Publish(f.ctx, ctxDispatch("a", "k")), should.Wrap, messaging.ErrNotFound)
}

func (f *StreamFixture) TestTheMonitorHearsEachDeliveryAfterTheLockIsReleased() {
	s := f.open("q", 1)
	f.publish("q", "1")
	d := f.read(s)
	f.So(s.Acknowledge(f.ctx, d), should.BeNil)
	f.So(f.monitor.Calls(), should.Equal, []string{`published "" "q" 1`, "delivered q", "acknowledged q 1"})
}

func (f *StreamFixture) TestAMonitorMayCallBackIntoTheBroker() {
	reentrant := &reentrantMonitor{}
	b := New(Options.Monitor(reentrant))
	reentrant.broker = b
	f.So(b.DeclareQueue("q", QueueOptions{}), should.BeNil)
	f.So(b.Publish(f.ctx, ctxDispatch("", "q")), should.BeNil)
	f.So(reentrant.counted, should.Equal, 1)
}

type reentrantMonitor struct {
	NopMonitor
	broker  *Broker
	counted int
}

func (m *reentrantMonitor) MessagePublished(_, key string, _ int) {
	m.counted = m.broker.MessageCount(key)
}

func (f *StreamFixture) declareRung(b *Broker, ttl int64) {
	f.So(b.DeclareExchange("acemq.retry", KindDirect, true), should.BeNil)
	f.So(b.DeclareQueue("orders", QueueOptions{Durable: true}), should.BeNil)
	f.So(b.Bind("orders", "acemq.retry", "orders"), should.BeNil)
	f.So(b.DeclareQueue("orders.retry.1s", QueueOptions{Durable: true, Arguments: map[string]any{
		"x-message-ttl": ttl, "x-dead-letter-exchange": "acemq.retry", "x-dead-letter-routing-key": "orders",
	}}), should.BeNil)
}

func (f *StreamFixture) TestExpireAppliesADueExpiryWithNothingElseTouchingTheBroker() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.declareRung(f.broker, 3_600_000)
		f.publish("orders.retry.1s", "later")
		pass(time.Hour)

		f.broker.Expire()

		f.So(f.monitor.Calls(), should.Contain, "expired orders.retry.1s")
	})
}

func (f *StreamFixture) TestAWaitingReaderWakesWhenAnExpiryIsDue() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.declareRung(f.broker, 20)
		s, err := f.stream(f.conn, messaging.StreamConfig{StreamName: "orders"})
		f.So(err, should.BeNil)
		f.So(f.broker.Publish(f.ctx, messaging.Dispatch{RoutingKey: "orders.retry.1s", Mandatory: true}), should.BeNil)
		started := time.Now()

		var d messaging.Delivery
		f.So(s.Read(f.ctx, &d), should.BeNil) // nothing else touches the broker

		f.So(time.Since(started), should.Equal, 20*time.Millisecond)
		f.So(d.Topic, should.Equal, "acemq.retry")
	})
}

func (f *StreamFixture) TestAStreamQueueCanBeDeclaredButNotConsumed() {
	f.So(f.broker.DeclareQueue("events", QueueOptions{Durable: true, Arguments: map[string]any{"x-queue-type": "stream"}}), should.BeNil)
	_, err := f.stream(f.conn, messaging.StreamConfig{StreamName: "events"})
	f.So(err, errorContains, "does not implement streams")
}
