package rabbitmq_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/transporttest"
	"github.com/warrenmq/messaging/rabbitmq"
)

func openStream(t *testing.T, conn messaging.Connection, config messaging.StreamConfig) messaging.Stream {
	t.Helper()
	ctx := testContext(t)
	r, err := conn.Reader(ctx)
	if err != nil {
		t.Fatalf("open reader: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	s, err := r.Stream(ctx, config)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func read(t *testing.T, s messaging.Stream) messaging.Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	var d messaging.Delivery
	if err := s.Read(ctx, &d); err != nil {
		t.Fatalf("read: %v", err)
	}
	return d
}

func TestBatchArrivesWholeAndInOrderAndOneMultipleAckEmptiesTheQueue(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("batch")
	conn := connect(t, b.url)
	batch := make([]messaging.Dispatch, 100)
	for i := range batch {
		batch[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, Payload: []byte(strconv.Itoa(i))}
	}
	if n, err := openWriter(t, conn).Write(testContext(t), batch...); err != nil || n != 100 {
		t.Fatalf("Write = %d, %v", n, err)
	}

	s := openStream(t, conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 200})
	deliveries := make([]messaging.Delivery, 100)
	for i := range deliveries {
		deliveries[i] = read(t, s)
		if got := string(deliveries[i].Payload); got != strconv.Itoa(i) {
			t.Fatalf("delivery %d carries %q; the batch arrived out of order", i, got)
		}
	}
	if err := s.Acknowledge(testContext(t), deliveries...); err != nil {
		t.Fatalf("Acknowledge: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Unacknowledged deliveries return to the queue when the channel closes, so an
	// empty queue now means every one was acknowledged.
	if got := b.count(queue); got != 0 {
		t.Fatalf("queue holds %d after acknowledging all; want 0", got)
	}
}

func TestEnvelopeSurvivesARoundTripExactly(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("envelope")
	conn := connect(t, b.url)
	firstSeen := time.UnixMilli(1_700_000_000_123).UTC()
	sent := messaging.Dispatch{
		RoutingKey:      queue,
		MessageID:       "id-1",
		CorrelationID:   "corr-1",
		CausationID:     "cause-1",
		ReplyTo:         "replies",
		MessageType:     "order-placed",
		Version:         3,
		ContentType:     "application/json",
		ContentEncoding: "gzip",
		Attempt:         2,
		FirstSeen:       firstSeen,
		Origin:          "orders@host-1",
		Error:           "boom",
		Claim:           "claim-1",
		Route:           []string{"validate", "price", "ship"},
		RoutePosition:   1,
		RouteID:         "route-1",
		Expiration:      time.Hour,
		Timestamp:       time.Unix(1_700_000_100, 0),
		Mandatory:       true,
		Headers:         map[string]any{"x-app": "value", "traceparent": "00-abc-def-01"},
		Payload:         []byte(`{"id":1}`),
	}
	if _, err := openWriter(t, conn).Write(testContext(t), sent); err != nil {
		t.Fatalf("Write: %v", err)
	}

	got := read(t, openStream(t, conn, messaging.StreamConfig{StreamName: queue}))

	raw := got.Upstream.(amqp.Delivery)
	wantHeaders := []string{
		"traceparent", "x-acemq-attempt", "x-acemq-causation", "x-acemq-claim", "x-acemq-correlation",
		"x-acemq-error", "x-acemq-first-seen", "x-acemq-id", "x-acemq-origin", "x-acemq-route",
		"x-acemq-route-id", "x-acemq-route-position", "x-acemq-type", "x-acemq-version", "x-app",
	}
	if names := slices.Sorted(maps.Keys(raw.Headers)); !slices.Equal(names, wantHeaders) {
		t.Errorf("wire headers %v; want %v", names, wantHeaders)
	}
	if raw.Expiration != "3600000" || raw.DeliveryMode != amqp.Persistent || raw.MessageId != "id-1" || raw.CorrelationId != "corr-1" || raw.Type != "order-placed" {
		t.Errorf("wire properties %+v", raw)
	}
	for _, difference := range transporttest.EnvelopeDifferences(got.Envelope(), sent.Envelope()) {
		t.Error(difference)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Durable", got.Durable, true},
		{"Payload", string(got.Payload), string(sent.Payload)},
		{"SourceQueue", got.SourceQueue, queue},
		{"RoutingKey", got.RoutingKey, queue},
		{"Topic", got.Topic, ""},
		{"Redelivered", got.Redelivered, false},
		{"Headers", len(got.Headers), 2},
		{"x-app", got.Headers["x-app"], "value"},
		{"traceparent", got.Headers["traceparent"], "00-abc-def-01"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v; want %v", c.name, c.got, c.want)
		}
	}
}

func TestEnvelopeDefaultsOnAMinimalDispatch(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("defaults")
	conn := connect(t, b.url)
	before := time.Now().Add(-time.Second)
	if _, err := openWriter(t, conn).Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Transient: true}); err != nil {
		t.Fatalf("Write: %v", err)
	}

	got := read(t, openStream(t, conn, messaging.StreamConfig{StreamName: queue}))

	raw := got.Upstream.(amqp.Delivery)
	for _, absent := range []string{"x-acemq-causation", "x-acemq-error", "x-acemq-claim", "x-acemq-route", "x-acemq-route-position", "x-acemq-route-id"} {
		if _, ok := raw.Headers[absent]; ok {
			t.Errorf("header %s was written for an empty value", absent)
		}
	}
	if got.MessageID == "" || got.CorrelationID != got.MessageID || got.MessageType != queue || got.Version != 1 || got.Attempt != 1 {
		t.Errorf("defaults: %+v", got)
	}
	if !strings.HasPrefix(got.Origin, "acemq@") || got.FirstSeen.Before(before) || got.Durable || raw.Expiration != "" {
		t.Errorf("origin %q, first seen %s, durable %v, expiration %q", got.Origin, got.FirstSeen, got.Durable, raw.Expiration)
	}
}

func TestExpirationOfOneSecondTravelsInMillisecondsAndTheMessageExpires(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("expiry")
	conn := connect(t, b.url)
	if _, err := openWriter(t, conn).Write(testContext(t), messaging.Dispatch{RoutingKey: queue, Expiration: time.Second}); err != nil {
		t.Fatalf("Write: %v", err)
	}

	// Peek at once, without acknowledging, then put the message back: a requeued
	// message keeps its original expiry.
	var (
		peeked   amqp.Delivery
		present  bool
		expected = "1000"
	)
	if err := b.do(func(ch *amqp.Channel) (err error) {
		if peeked, present, err = ch.Get(queue, false); err != nil || !present {
			return err
		}
		return peeked.Nack(false, true)
	}); err != nil {
		t.Fatalf("peek at %s: %v", queue, err)
	}
	if !present {
		t.Fatalf("the queue was empty right after the confirmed publish; want the message still there (was the TTL sent in seconds as milliseconds?)")
	}
	if peeked.Expiration != expected {
		t.Fatalf("expiration property = %q; want %q (one second in milliseconds)", peeked.Expiration, expected)
	}
	testenv.Eventually(t, settle, "the message expiring", func() bool { return b.count(queue) == 0 })
}

func TestStreamDeclaresTopologyAndSettlementQueues(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := testenv.Name(t, "topology")
	topic := testenv.Name(t, "topic")
	for _, q := range []string{queue, queue + ".dlq", queue + ".parked"} {
		b.deleteQueueAtEnd(q)
	}
	b.deleteExchangeAtEnd(topic)
	conn := connect(t, b.url)

	s := openStream(t, conn, messaging.StreamConfig{
		StreamName: queue, Topics: []string{topic}, EstablishTopology: true, Replication: true, DeadLetters: true,
	})

	for _, q := range []string{queue + ".dlq", queue + ".parked"} {
		if !b.exists(q) {
			t.Errorf("queue %s was not declared", q)
		}
	}
	quorum := b.do(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{
			amqp.QueueTypeArg: amqp.QueueTypeQuorum, "x-dead-letter-exchange": "acemq.dlx", "x-dead-letter-routing-key": queue + ".dlq",
		})
		return err
	})
	if quorum != nil {
		t.Errorf("redeclaring %s as quorum with the dead-letter arguments failed, so it was not declared so: %v", queue, quorum)
	}
	w := openWriter(t, conn)
	dispatches := []messaging.Dispatch{
		{Topic: topic, RoutingKey: "any", Mandatory: true, Payload: []byte("via topic")},
		{Topic: "acemq.dlx", RoutingKey: queue + ".dlq", Mandatory: true},
		{Topic: "acemq.dlx", RoutingKey: queue + ".parked", Mandatory: true},
	}
	if n, err := w.Write(testContext(t), dispatches...); err != nil || n != 3 {
		t.Fatalf("Write through the declared bindings = %d, %v", n, err)
	}
	if d := read(t, s); string(d.Payload) != "via topic" || d.Topic != topic {
		t.Fatalf("read %q from %q", d.Payload, d.Topic)
	}
}

func TestAcknowledgeRefusesADeliveryTheStreamDoesNotHold(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("unknown-ack")
	conn := connect(t, b.url)
	if _, err := openWriter(t, conn).Write(testContext(t), messaging.Dispatch{RoutingKey: queue}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	s := openStream(t, conn, messaging.StreamConfig{StreamName: queue})
	d := read(t, s)

	if err := s.Acknowledge(testContext(t), messaging.Delivery{DeliveryID: d.DeliveryID + 100}); err == nil {
		t.Fatal("acknowledging an unknown delivery tag succeeded")
	}
	if err := s.Acknowledge(testContext(t), d); err != nil {
		t.Fatalf("the stream is unusable after a refused acknowledgement: %v", err)
	}
}

func TestReadFailsClearlyWhenTheQueueIsMissing(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	conn := connect(t, b.url)
	r, err := conn.Reader(testContext(t))
	if err != nil {
		t.Fatalf("Reader: %v", err)
	}
	defer func() { _ = r.Close() }()

	_, err = r.Stream(testContext(t), messaging.StreamConfig{StreamName: testenv.Name(t, "missing")})

	if !errors.Is(err, messaging.ErrNotFound) || !strings.Contains(err.Error(), "consume queue") {
		t.Fatalf("Stream on a missing queue = %v; want an error naming the step and matching messaging.ErrNotFound", err)
	}
	if errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("error %v claims the reader was closed", err)
	}
}

// A stream queue has no way to return one message, and RabbitMQ answers a
// basic.nack on one by closing the whole connection: Requeue refuses it
// before anything is sent, and the connection and the stream go on.
func TestRequeueOnAStreamQueueIsRefusedWithoutClosingTheConnection(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := testenv.Name(t, "requeue-stream")
	b.deleteQueueAtEnd(queue)
	conn := connect(t, b.url)
	s := openStream(t, conn, messaging.StreamConfig{
		StreamName: queue, EstablishTopology: true, QueueType: messaging.QueueStream, BufferCapacity: 10,
		ConsumerArguments: map[string]any{"x-stream-offset": "first"},
	})
	writer := openWriter(t, conn)
	for range 2 {
		if _, err := writer.Write(testContext(t), messaging.Dispatch{RoutingKey: queue}); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	first := read(t, s)
	requeuer, ok := messaging.As[messaging.Requeuer](s)
	if !ok {
		t.Fatal("the stream offers no Requeuer")
	}
	if err := requeuer.Requeue(testContext(t), first); !errors.Is(err, rabbitmq.ErrRequeueOnStreamQueue) {
		t.Fatalf("Requeue on a stream queue: %v; want ErrRequeueOnStreamQueue", err)
	}
	second := read(t, s)
	if err := s.Acknowledge(testContext(t), first, second); err != nil {
		t.Fatalf("the stream is unusable after a refused requeue: %v", err)
	}
	if _, err := writer.Write(testContext(t), messaging.Dispatch{RoutingKey: queue}); err != nil {
		t.Fatalf("the connection is unusable after a refused requeue: %v", err)
	}
}
