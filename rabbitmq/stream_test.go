package rabbitmq

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestStreamFixture(t *testing.T) {
	gunit.Run(new(StreamFixture), t)
}

type StreamFixture struct {
	*gunit.Fixture
	h         *harness
	connector messaging.Connector
	raw       *fakeConnection
	reader    messaging.Reader
	channel   *fakeChannel
}

func (f *StreamFixture) Setup() {
	f.h = newHarness()
	f.connector = New(f.h.options()...)
	conn, _ := f.connector.Connect(context.Background())
	f.raw = f.h.dialer.last()
	var err error
	f.reader, err = conn.Reader(context.Background())
	f.So(err, should.BeNil)
	f.channel = receive(f.T(), f.raw.opened, "the reader's channel")
}

func (f *StreamFixture) Teardown() {
	_ = f.connector.Close()
}

func (f *StreamFixture) stream(config messaging.StreamConfig) messaging.Stream {
	s, err := f.reader.Stream(context.Background(), config)
	f.So(err, should.BeNil)
	return s
}

func (f *StreamFixture) methods() []string {
	var names []string
	for _, call := range f.channel.Calls() {
		names = append(names, call.method)
	}
	return names
}

func (f *StreamFixture) TestTopologyIsDeclaredAsConfigured() {
	f.stream(messaging.StreamConfig{
		StreamName: "orders", ConsumerName: "billing", Topics: []string{"order-placed", "order-paid"},
		EstablishTopology: true, Replication: true, DeadLetters: true, BufferCapacity: 32,
	})

	calls := f.channel.Calls()
	// Every exchange, then every queue, then every binding (wire.TopologyOf).
	f.So(calls[0], should.Resemble, fakeCall{"ExchangeDeclare", []any{"order-placed", "fanout", true, false, false, amqp.Table(nil)}})
	f.So(calls[1], should.Resemble, fakeCall{"ExchangeDeclare", []any{"order-paid", "fanout", true, false, false, amqp.Table(nil)}})
	f.So(calls[2], should.Resemble, fakeCall{"ExchangeDeclare", []any{"acemq.dlx", "direct", true, false, false, amqp.Table(nil)}})
	f.So(calls[3], should.Resemble, fakeCall{"QueueDeclare", []any{"orders", true, false, false, amqp.Table{
		"x-queue-type": "quorum", "x-dead-letter-exchange": "acemq.dlx", "x-dead-letter-routing-key": "orders.dlq",
	}}})
	f.So(calls[4], should.Resemble, fakeCall{"QueueDeclare", []any{"orders.dlq", true, false, false, amqp.Table(nil)}})
	f.So(calls[5], should.Resemble, fakeCall{"QueueDeclare", []any{"orders.parked", true, false, false, amqp.Table(nil)}})
	f.So(calls[6], should.Resemble, fakeCall{"QueueBind", []any{"orders", "", "order-placed"}})
	f.So(calls[7], should.Resemble, fakeCall{"QueueBind", []any{"orders", "", "order-paid"}})
	f.So(calls[8], should.Resemble, fakeCall{"QueueBind", []any{"orders.dlq", "orders.dlq", "acemq.dlx"}})
	f.So(calls[9], should.Resemble, fakeCall{"QueueBind", []any{"orders.parked", "orders.parked", "acemq.dlx"}})
	f.So(calls[10], should.Resemble, fakeCall{"Qos", []any{32, 0, false}})
	f.So(calls[11].method, should.Equal, "Consume")
	f.So(calls[11].args[0], should.Equal, "orders")
	f.So(calls[11].args[1], should.StartWith, "billing-")
	f.So(calls[11].args[2], should.Equal, false) // manual acknowledgement
	f.So(len(calls), should.Equal, 12)
}

func (f *StreamFixture) TestAClassicExclusiveQueueCarriesNoQueueType() {
	f.stream(messaging.StreamConfig{StreamName: "orders", EstablishTopology: true, ExclusiveStream: true})

	f.So(f.channel.Calls()[0], should.Resemble, fakeCall{"QueueDeclare", []any{"orders", true, false, true, amqp.Table(nil)}})
}

func (f *StreamFixture) TestWithoutTopologyOnlyPrefetchAndConsumeAreSent() {
	f.stream(messaging.StreamConfig{StreamName: "orders"})

	f.So(f.methods(), should.Resemble, []string{"Qos", "Consume"})
	f.So(f.channel.Calls()[0].args[0], should.Equal, 1) // a zero buffer still prefetches one
	f.So(f.channel.Calls()[1].args[1], should.StartWith, "orders-")
}

func (f *StreamFixture) TestEachStreamHasItsOwnConsumerTag() {
	f.stream(messaging.StreamConfig{StreamName: "orders", ConsumerName: "c"})
	first := f.channel.Calls()[1].args[1]
	f.stream(messaging.StreamConfig{StreamName: "orders", ConsumerName: "c"})
	second := receive(f.T(), f.raw.opened, "the second stream's channel")

	f.So(second.Calls()[1].args[1], should.NotEqual, first)
}

func (f *StreamFixture) TestAFailedDeclarationNamesTheStepAndClosesTheChannel() {
	f.channel.failing["QueueDeclare"] = &amqp.Error{Code: 405, Reason: "RESOURCE_LOCKED - cannot obtain exclusive access to locked queue 'orders'", Server: true}

	_, err := f.reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders", EstablishTopology: true})

	f.So(err.Error(), should.ContainSubstring, `open stream "orders": messaging: declare queue "orders": `)
	f.So(err, should.Wrap, messaging.ErrResourceLocked)
	f.So(f.methods(), should.Resemble, []string{"QueueDeclare", "Close"})
}

// A queue or exchange another library declared differently is used as it is:
// one WARN in the broker's words, no binding to a refused exchange, and the
// stream goes on, on a new channel, since the refusal closed the first.
func (f *StreamFixture) TestADeclarationThatDiffersFromWhatExistsIsWarnedAndWhatExistsIsUsed() {
	differs := &amqp.Error{Code: 406, Reason: "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'orders'", Server: true}
	f.channel.failing["ExchangeDeclare"] = differs
	result := make(chan error, 1)
	go func() {
		_, err := f.reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders.new", Topics: []string{"orders"}, EstablishTopology: true})
		result <- err
	}()
	replacement := receive(f.T(), f.raw.opened, "the replacement channel")
	f.So(receive(f.T(), result, "Stream"), should.BeNil)

	f.So(f.methods(), should.Resemble, []string{"ExchangeDeclare", "Close"})
	var methods []string
	for _, call := range replacement.Calls() {
		methods = append(methods, call.method)
	}
	f.So(methods, should.Resemble, []string{"QueueDeclare", "Qos", "Consume"}) // no QueueBind
	f.So(f.h.logs.String(), should.ContainSubstring, `level=WARN msg="AMQP declare exchange \"orders\": it already exists with other properties`)
	f.So(f.h.logs.String(), should.ContainSubstring, "inequivalent arg 'type' for exchange 'orders'")
}

func (f *StreamFixture) TestADeclarationIsBoundedByTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		f.channel.Block("QueueDeclare")
		started := time.Now()

		_, err := f.reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders", EstablishTopology: true})

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(errors.Is(err, ErrConnectTimeout), should.BeTrue)
		f.So(f.raw.isSevered(), should.BeTrue)
	})
}

func (f *StreamFixture) TestReadFillsTheDelivery() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	f.channel.Deliver(amqp.Delivery{
		DeliveryTag: 7, Exchange: "events", RoutingKey: "order.placed", Redelivered: true,
		Headers: amqp.Table{"x-acemq-id": "m-1", "x-app": "v"}, Body: []byte("body"),
	})

	var d messaging.Delivery
	err := s.Read(context.Background(), &d)

	f.So(err, should.BeNil)
	f.So(d.DeliveryID, should.Equal, uint64(7))
	f.So(d.SourceQueue, should.Equal, "orders")
	f.So(d.Topic, should.Equal, "events")
	f.So(d.RoutingKey, should.Equal, "order.placed")
	f.So(d.Redelivered, should.BeTrue)
	f.So(d.MessageID, should.Equal, "m-1")
	f.So(d.Headers, should.Resemble, map[string]any{"x-app": "v"})
	f.So(string(d.Payload), should.Equal, "body")
	f.So(d.Upstream.(amqp.Delivery).DeliveryTag, should.Equal, uint64(7))
}

func (f *StreamFixture) TestReadEndsWhenTheContextEnds() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	err := s.Read(ctx, &messaging.Delivery{})

	f.So(errors.Is(err, context.Canceled), should.BeTrue)
}

func (f *StreamFixture) TestReadEndsWithTheBrokersReasonWhenTheChannelCloses() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})

	f.channel.BrokerClose(404, "NOT_FOUND - queue 'orders' deleted")
	err := s.Read(context.Background(), &messaging.Delivery{})

	f.So(err.Error(), should.ContainSubstring, "NOT_FOUND - queue 'orders' deleted")
	f.So(err.Error(), should.ContainSubstring, `stream "orders" ended`)
}

func (f *StreamFixture) read(s messaging.Stream, tags ...uint64) []messaging.Delivery {
	var deliveries []messaging.Delivery
	for _, tag := range tags {
		f.channel.Deliver(amqp.Delivery{DeliveryTag: tag})
		var d messaging.Delivery
		f.So(s.Read(context.Background(), &d), should.BeNil)
		deliveries = append(deliveries, d)
	}
	return deliveries
}

func (f *StreamFixture) acks() []fakeAck {
	var acks []fakeAck
	for {
		select {
		case a := <-f.channel.acked:
			acks = append(acks, a)
		default:
			return acks
		}
	}
}

func (f *StreamFixture) TestContiguousDeliveriesAreAcknowledgedWithOneMultipleAck() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	d := f.read(s, 1, 2, 3)

	f.So(s.Acknowledge(context.Background(), d[2], d[0], d[1]), should.BeNil)

	f.So(f.acks(), should.Resemble, []fakeAck{{tag: 3, multiple: true}})
}

func (f *StreamFixture) TestDeliveriesWithAGapAreAcknowledgedOneByOne() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	d := f.read(s, 1, 2, 3)

	f.So(s.Acknowledge(context.Background(), d[0], d[2]), should.BeNil)
	f.So(f.acks(), should.Resemble, []fakeAck{{tag: 1}, {tag: 3}})

	f.So(s.Acknowledge(context.Background(), d[1]), should.BeNil)
	f.So(f.acks(), should.Resemble, []fakeAck{{tag: 2}})
}

func (f *StreamFixture) TestALaterBatchAfterAnEarlierOneIsAcknowledgedWithAMultipleAck() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	d := f.read(s, 1, 2, 3, 4)
	f.So(s.Acknowledge(context.Background(), d[0], d[1]), should.BeNil)
	f.acks()

	f.So(s.Acknowledge(context.Background(), d[2], d[3]), should.BeNil)

	f.So(f.acks(), should.Resemble, []fakeAck{{tag: 4, multiple: true}})
}

func (f *StreamFixture) TestAcknowledgingADeliveryNotHeldSendsNothing() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	d := f.read(s, 1)

	err := s.Acknowledge(context.Background(), d[0], messaging.Delivery{DeliveryID: 9})

	f.So(err.Error(), should.ContainSubstring, "delivery 9 is not awaiting acknowledgement")
	f.So(f.acks(), should.BeEmpty)
}

func (f *StreamFixture) TestAStalledAcknowledgementSeversAtTheBrokerTimeout() {
	f.stallSettlement("Ack", "acknowledgement", func(s messaging.Stream, d messaging.Delivery) error {
		return s.Acknowledge(context.Background(), d)
	})
}

func (f *StreamFixture) TestAStalledRequeueSeversAtTheBrokerTimeout() {
	f.stallSettlement("Nack", "requeue", func(s messaging.Stream, d messaging.Delivery) error {
		requeuer, _ := messaging.As[messaging.Requeuer](s)
		return requeuer.Requeue(context.Background(), d)
	})
}

// stallSettlement blocks method on the channel and settles a delivery with
// it: at the broker timeout the connection is severed and the error wraps
// ErrAcknowledgeTimeout.
func (f *StreamFixture) stallSettlement(method, op string, settle func(messaging.Stream, messaging.Delivery) error) {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		s := f.stream(messaging.StreamConfig{StreamName: "orders"})
		d := f.read(s, 1)[0]
		f.channel.Block(method)
		started := time.Now()

		err := settle(s, d)

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(errors.Is(err, ErrAcknowledgeTimeout), should.BeTrue)
		f.So(f.raw.isSevered(), should.BeTrue)
		f.So(f.h.logs.String(), should.ContainSubstring, "AMQP "+op+" did not complete within [30s]; severing the connection.")
	})
}

func (f *StreamFixture) TestRequeueNacksThatDeliveryAloneAndTheOthersStayOutstanding() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	d := f.read(s, 1, 2, 3)
	requeuer, ok := messaging.As[messaging.Requeuer](s)
	f.So(ok, should.BeTrue)

	f.So(requeuer.Requeue(context.Background(), d[1]), should.BeNil)
	f.So(s.Acknowledge(context.Background(), d[0], d[2]), should.BeNil)

	f.So(receive(f.T(), f.channel.nacked, "the nack"), should.Resemble, fakeNack{tag: 2, multiple: false, requeue: true})
	f.So(f.acks(), should.Resemble, []fakeAck{{tag: 3, multiple: true}})
	err := requeuer.Requeue(context.Background(), d[1])
	f.So(err.Error(), should.ContainSubstring, "delivery 2 is not awaiting acknowledgement")
}

func (f *StreamFixture) TestRequeueAfterTheStreamClosedFailsClosedAndSendsNothing() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	d := f.read(s, 1)
	f.So(s.Close(), should.BeNil)
	requeuer, _ := messaging.As[messaging.Requeuer](s)

	err := requeuer.Requeue(context.Background(), d[0])

	f.So(err, should.Wrap, messaging.ErrClosed)
	f.So(len(f.channel.nacked), should.Equal, 0)
}

func (f *StreamFixture) TestCloseCancelsTheConsumerThenClosesTheChannel() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	tag := f.channel.Calls()[1].args[1]

	f.So(s.Close(), should.BeNil)
	f.So(s.Close(), should.BeNil)

	calls := f.channel.Calls()
	f.So(calls[2], should.Resemble, fakeCall{"Cancel", []any{tag}})
	f.So(calls[3].method, should.Equal, "Close")
	f.So(errors.Is(s.Read(context.Background(), &messaging.Delivery{}), messaging.ErrClosed), should.BeTrue)
}

func (f *StreamFixture) TestAStalledCancelSeversAtTheBrokerTimeout() {
	inBubble(f.T(), f, f.Setup, f.Teardown, func() {
		s := f.stream(messaging.StreamConfig{StreamName: "orders"})
		f.channel.Block("Cancel")
		started := time.Now()

		err := s.Close()

		f.So(time.Since(started), should.Equal, DefaultBrokerTimeout)
		f.So(errors.Is(err, ErrCloseTimeout), should.BeTrue)
		f.So(strings.Contains(f.h.logs.String(), "AMQP consumer cancel did not complete within [30s]; severing the connection."), should.BeTrue)
	})
}

func (f *StreamFixture) TestClosingTheReaderClosesItsStreams() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})

	f.So(f.reader.Close(), should.BeNil)

	f.So(f.methods(), should.Resemble, []string{"Qos", "Consume", "Cancel", "Close"})
	f.So(errors.Is(s.Read(context.Background(), &messaging.Delivery{}), messaging.ErrClosed), should.BeTrue)
	_, err := f.reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "orders"})
	f.So(errors.Is(err, messaging.ErrClosed), should.BeTrue)
}

func (f *StreamFixture) TestAnEmptyStreamNameIsRefused() {
	_, err := f.reader.Stream(context.Background(), messaging.StreamConfig{})

	f.So(err.Error(), should.ContainSubstring, "StreamName is empty")
}

func (f *StreamFixture) TestAWaitingReadHoldsItsTurnSoAConcurrentReadCannotTakeADeliveryBeforeItIsRegistered() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	first := make(chan messaging.Delivery, 1)
	go func() {
		var d messaging.Delivery
		_ = s.Read(context.Background(), &d)
		first <- d
	}()
	turn := s.(*stream).turn
	for deadline := time.Now().Add(waitLimit); len(turn) == 0; {
		if time.Now().After(deadline) {
			f.T().Fatalf("the first Read never took its turn")
		}
		runtime.Gosched()
	}

	// A second Read waits for the first to receive and register; its own ctx
	// still bounds that wait.
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		var d messaging.Delivery
		second <- s.Read(ctx, &d)
	}()
	cancel()
	f.So(errors.Is(receive(f.T(), second, "the second Read"), context.Canceled), should.BeTrue)

	f.channel.Deliver(amqp.Delivery{DeliveryTag: 1})
	f.So(receive(f.T(), first, "the first Read").DeliveryID, should.Equal, uint64(1))
	f.So(len(turn), should.Equal, 0)
}

func (f *StreamFixture) TestConcurrentReadersTakeDistinctDeliveriesThatCanAllBeAcknowledgedTogether() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders"})
	const n = 200
	got := make(chan messaging.Delivery, n)
	for range 4 {
		go func() {
			for {
				var d messaging.Delivery
				if s.Read(context.Background(), &d) != nil {
					return
				}
				got <- d
			}
		}()
	}
	for tag := uint64(1); tag <= n; tag++ {
		f.channel.Deliver(amqp.Delivery{DeliveryTag: tag})
	}
	var all []messaging.Delivery
	for range n {
		all = append(all, receive(f.T(), got, "a delivery"))
	}

	f.So(s.Acknowledge(context.Background(), all...), should.BeNil)
	f.So(f.acks(), should.Resemble, []fakeAck{{tag: n, multiple: true}})
}

func (f *StreamFixture) TestBindingsQueueTypeArgumentsAndLifetimeAreDeclaredAsConfigured() {
	f.stream(messaging.StreamConfig{
		StreamName: "replay", EstablishTopology: true, QueueType: messaging.QueueStream,
		QueueArguments: map[string]any{"x-max-length-bytes": 1 << 20},
		Bindings: []messaging.StreamBinding{
			{Exchange: "orders", Kind: messaging.ExchangeTopic, Key: "order.*"},
			{Exchange: "audit", Kind: messaging.ExchangeHeaders, Arguments: map[string]any{"x-match": "any", "kind": "refund"}},
		},
	})

	calls := f.channel.Calls()
	f.So(calls[0], should.Resemble, fakeCall{"ExchangeDeclare", []any{"orders", "topic", true, false, false, amqp.Table(nil)}})
	f.So(calls[1], should.Resemble, fakeCall{"ExchangeDeclare", []any{"audit", "headers", true, false, false, amqp.Table(nil)}})
	f.So(calls[2], should.Resemble, fakeCall{"QueueDeclare", []any{"replay", true, false, false, amqp.Table{"x-queue-type": "stream", "x-max-length-bytes": 1 << 20}}})
	f.So(calls[3], should.Resemble, fakeCall{"QueueBind", []any{"replay", "order.*", "orders"}})
	f.So(calls[4], should.Resemble, fakeCall{"QueueBind", []any{"replay", "", "audit", amqp.Table{"x-match": "any", "kind": "refund"}}})
}

func (f *StreamFixture) TestAnAutoDeleteTransientQueueAndATypeStatedTwice() {
	f.stream(messaging.StreamConfig{StreamName: "scratch", EstablishTopology: true, AutoDeleteStream: true, TransientStream: true})
	f.So(f.channel.Calls()[0], should.Resemble, fakeCall{"QueueDeclare", []any{"scratch", false, true, false, amqp.Table(nil)}})

	_, err := f.reader.Stream(context.Background(), messaging.StreamConfig{StreamName: "q", EstablishTopology: true, Replication: true, QueueType: messaging.QueueStream})
	f.So(err, should.NotBeNil)
}

func (f *StreamFixture) TestAnExactConsumerTagAndConsumerArgumentsReachTheConsume() {
	f.stream(messaging.StreamConfig{StreamName: "replay", ConsumerName: "replayer", ExactConsumerTag: true,
		ConsumerArguments: map[string]any{"x-stream-offset": "first"}})

	f.So(f.channel.Calls()[1], should.Resemble, fakeCall{"Consume", []any{"replay", "replayer", false, amqp.Table{"x-stream-offset": "first"}}})
}

func (f *StreamFixture) TestAPollingStreamGetsOneMessagePerReadAndSaysWhenTheQueueIsEmpty() {
	s := f.stream(messaging.StreamConfig{StreamName: "orders", Poll: true})
	f.channel.Deliver(amqp.Delivery{DeliveryTag: 1, Body: []byte("one")})

	var d messaging.Delivery
	f.So(s.Read(context.Background(), &d), should.BeNil)
	f.So(string(d.Payload), should.Equal, "one")
	f.So(s.Read(context.Background(), &d), should.Wrap, messaging.ErrQueueEmpty)
	f.So(s.Acknowledge(context.Background(), messaging.Delivery{DeliveryID: 1}), should.BeNil)
	f.So(s.Close(), should.BeNil)

	f.So(f.methods(), should.Resemble, []string{"Get", "Get", "Ack", "Close"}) // no Qos, Consume or Cancel
}
