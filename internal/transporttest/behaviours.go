package transporttest

import (
	"errors"
	"reflect"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
)

func routesThroughTopic(h *harness) {
	queue, topic := h.queue(), h.exchange()
	conn := h.connect()
	s := h.declared(conn, queue, 10, topic)
	h.write(conn, messaging.Dispatch{Topic: topic, RoutingKey: "any.key", Payload: []byte("routed"), Mandatory: true})

	d := h.read(s)
	if string(d.Payload) != "routed" || d.Topic != topic || d.RoutingKey != "any.key" || d.SourceQueue != queue || d.Redelivered {
		h.t.Fatalf("delivery = payload %q topic %q key %q queue %q redelivered %t; want %q %q %q %q false",
			d.Payload, d.Topic, d.RoutingKey, d.SourceQueue, d.Redelivered, "routed", topic, "any.key", queue)
	}
	h.acknowledge(s, d)
}

func routesThroughDefaultExchange(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 10)
	h.write(conn, toQueue(queue, "direct"))

	d := h.read(s)
	if string(d.Payload) != "direct" || d.Topic != "" || d.RoutingKey != queue {
		h.t.Fatalf("delivery = payload %q topic %q key %q; want %q, the default exchange, key %q", d.Payload, d.Topic, d.RoutingKey, "direct", queue)
	}
	h.acknowledge(s, d)
}

func mandatoryUnroutable(h *harness) {
	topic := h.exchange()
	h.declareExchange(topic, messaging.ExchangeFanout)
	conn := h.connect()
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()

	n, err := w.Write(h.context(), messaging.Dispatch{Topic: topic, RoutingKey: "nobody.listens", Payload: []byte("lost"), Mandatory: true})
	if n != 0 || !errors.Is(err, messaging.ErrUnroutable) {
		h.t.Fatalf("write = %d, %v; want 0 and an error wrapping messaging.ErrUnroutable", n, err)
	}
	for _, part := range []string{topic, "nobody.listens", "NO_ROUTE"} {
		if !strings.Contains(err.Error(), part) {
			h.t.Errorf("the error %q does not name %q", err, part)
		}
	}
	var published *messaging.PublishError
	if !errors.As(err, &published) || len(published.Results) != 1 || published.Results[0].Routed || published.Results[0].MessageID == "" {
		h.t.Fatalf("error %#v: want a *messaging.PublishError with one unrouted result carrying its message id", err)
	}

	// The default exchange with a key naming no queue is unroutable too.
	missing := h.queue()
	n, err = w.Write(h.context(), toQueue(missing, "lost"))
	if n != 0 || !errors.Is(err, messaging.ErrUnroutable) {
		h.t.Fatalf("write to the default exchange for missing queue = %d, %v; want 0 and messaging.ErrUnroutable", n, err)
	}
}

func nonMandatoryUnroutable(h *harness) {
	topic := h.exchange()
	h.declareExchange(topic, messaging.ExchangeFanout)
	conn := h.connect()
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()
	n, err := w.Write(h.context(), messaging.Dispatch{Topic: topic, RoutingKey: "k", Payload: []byte("dropped")})
	if n != 1 || err != nil {
		h.t.Fatalf("write = %d, %v; want 1, nil: the broker drops a non-mandatory message silently", n, err)
	}
}

func requeueOrder(h *harness) {
	queue := h.queue()
	conn := h.connect()
	first := h.declared(conn, queue, 3)
	h.write(conn, toQueue(queue, "1"), toQueue(queue, "2"), toQueue(queue, "3"), toQueue(queue, "4"))

	var previous uint64
	for _, want := range []string{"1", "2", "3"} {
		d := h.read(first)
		if string(d.Payload) != want || d.Redelivered {
			h.t.Fatalf("first read = %q (redelivered %t); want %q, not redelivered", d.Payload, d.Redelivered, want)
		}
		if d.DeliveryID <= previous {
			h.t.Fatalf("delivery id %d does not increase past %d", d.DeliveryID, previous)
		}
		previous = d.DeliveryID
	}
	if err := first.Close(); err != nil {
		h.t.Fatalf("close stream: %v", err)
	}

	second := h.declared(conn, queue, 10)
	for _, want := range []struct {
		payload     string
		redelivered bool
	}{{"1", true}, {"2", true}, {"3", true}, {"4", false}} {
		d := h.read(second)
		if string(d.Payload) != want.payload || d.Redelivered != want.redelivered {
			h.t.Fatalf("after requeue read %q (redelivered %t); want %q (redelivered %t)", d.Payload, d.Redelivered, want.payload, want.redelivered)
		}
		h.acknowledge(second, d)
	}
}

func connectionCloseRequeues(h *harness) {
	queue := h.queue()
	consumer := h.connect()
	s := h.declared(consumer, queue, 2)
	h.write(consumer, toQueue(queue, "a"), toQueue(queue, "b"))
	h.read(s)
	h.read(s)
	if err := consumer.Close(); err != nil {
		h.t.Fatalf("close connection: %v", err)
	}

	again := h.declared(h.connect(), queue, 2)
	for _, want := range []string{"a", "b"} {
		d := h.read(again)
		if string(d.Payload) != want || !d.Redelivered {
			h.t.Fatalf("after connection close read %q (redelivered %t); want %q redelivered", d.Payload, d.Redelivered, want)
		}
		h.acknowledge(again, d)
	}
}

// A stream whose queue exists with other properties uses it as it is (the
// transport logs a WARN naming the difference) and changes nothing.
func redeclareMismatch(h *harness) {
	queue := h.queue()
	classic := h.declared(h.connect(), queue, 1)
	if err := classic.Close(); err != nil {
		h.t.Fatalf("close stream: %v", err)
	}
	conn := h.connect()
	s, err := h.openStream(conn, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, Replication: true, BufferCapacity: 1})
	if err != nil {
		h.t.Fatalf("a quorum stream over classic queue %s: %v; want the queue used as it is", queue, err)
	}
	h.write(conn, toQueue(queue, "still classic"))
	h.acknowledge(s, h.read(s))
	err = h.admin.DeclareQueue(h.context(), messaging.Queue{Name: queue, Type: messaging.QueueQuorum, Durable: true})
	if !errors.Is(err, messaging.ErrPreconditionFailed) {
		h.t.Fatalf("the queue as quorum after the stream opened: %v; want messaging.ErrPreconditionFailed (it must still be classic)", err)
	}
}

func envelopeRoundTrip(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 1)
	headers := map[string]any{"x-tenant": "acme", "x-count": int64(42), "x-int": 7, "x-large": 1 << 40, "x-raw": []byte("raw")}
	sent := messaging.Dispatch{RoutingKey: queue, Mandatory: true, Headers: headers, Payload: []byte(`{"id":1}`)}
	sent.SetEnvelope(messaging.Envelope{
		MessageID:       "7f3c2b1a-0000-4000-8000-000000000001",
		CorrelationID:   "7f3c2b1a-0000-4000-8000-000000000002",
		CausationID:     "7f3c2b1a-0000-4000-8000-000000000003",
		ReplyTo:         "replies",
		MessageType:     "order-placed",
		Version:         3,
		ContentType:     "application/json",
		ContentEncoding: "identity",
		Attempt:         2,
		FirstSeen:       time.UnixMilli(1_700_000_000_123).UTC(),
		Origin:          "orders@host-1",
		Error:           "set aside for a reason",
		Claim:           "claim-1",
		Route:           []string{"a", "b"},
		RoutePosition:   1,
		RouteID:         "route-1",
		Expiration:      time.Minute + 500*time.Microsecond,
		Timestamp:       time.Unix(1_700_000_100, 0).UTC(),
	})
	if unset := UnsetEnvelopeFields(sent.Envelope()); len(unset) > 0 {
		h.t.Fatalf("the round trip sends no value in %v: give every envelope field one", unset)
	}
	h.write(conn, sent)
	headers["x-tenant"] = "changed after publishing"

	d := h.read(s)
	h.acknowledge(s, d)
	want := sent.Envelope()
	want.Expiration = time.Minute + time.Millisecond // rounded up to whole milliseconds
	for _, difference := range EnvelopeDifferences(d.Envelope(), want) {
		h.t.Error(difference)
	}
	check := func(field string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			h.t.Errorf("%s = %#v; want %#v", field, got, want)
		}
	}
	check("Durable", d.Durable, true)
	check("Payload", string(d.Payload), string(sent.Payload))
	check("header x-tenant", d.Headers["x-tenant"], "acme")
	check("header x-count", d.Headers["x-count"], int64(42))
	check("header x-int (an int travels as int32)", d.Headers["x-int"], int32(7))
	check("header x-large (an int over the int32 range travels as int64)", d.Headers["x-large"], int64(1<<40))
	check("header x-raw", d.Headers["x-raw"], []byte("raw"))
	for name := range d.Headers {
		if strings.HasPrefix(name, "x-acemq-") {
			h.t.Errorf("header %q of the reserved namespace reached the consumer", name)
		}
	}
}

func envelopeDefaults(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 1)
	before := time.Now().Add(-time.Second)
	h.write(conn, messaging.Dispatch{RoutingKey: queue, Payload: []byte("bare"), Mandatory: true})

	d := h.read(s)
	h.acknowledge(s, d)
	if len(d.MessageID) != 36 || d.CorrelationID != d.MessageID {
		h.t.Errorf("MessageID %q, CorrelationID %q; want a UUID and the correlation equal to it", d.MessageID, d.CorrelationID)
	}
	if d.Attempt != 1 || d.Version != 1 || d.MessageType != queue || !d.Durable {
		h.t.Errorf("Attempt %d, Version %d, MessageType %q, Durable %t; want 1, 1, %q (the routing key), true", d.Attempt, d.Version, d.MessageType, d.Durable, queue)
	}
	if d.FirstSeen.Before(before) || d.FirstSeen.After(time.Now().Add(time.Second)) {
		h.t.Errorf("FirstSeen %v; want about now", d.FirstSeen)
	}
	if d.Origin == "" {
		h.t.Errorf("Origin is empty; want the transport's default")
	}
}

func prefetchBound(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 2)
	h.write(conn, toQueue(queue, "1"), toQueue(queue, "2"), toQueue(queue, "3"))
	one, two := h.read(s), h.read(s)
	h.nothing(s)
	h.acknowledge(s, one)
	if d := h.read(s); string(d.Payload) != "3" {
		h.t.Fatalf("after acknowledging one of two read %q; want %q", d.Payload, "3")
	}
	_ = two
}

func commitWriterRollback(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 10)
	cw := h.openCommitWriter(conn)
	defer func() { _ = cw.Close() }()

	if n, err := cw.Write(h.context(), toQueue(queue, "rolled back")); n != 1 || err != nil {
		h.t.Fatalf("commit writer write = %d, %v; want 1, nil", n, err)
	}
	if err := cw.Rollback(); err != nil {
		h.t.Fatalf("rollback: %v", err)
	}
	if n, err := cw.Write(h.context(), toQueue(queue, "committed")); n != 1 || err != nil {
		h.t.Fatalf("commit writer write = %d, %v; want 1, nil", n, err)
	}
	h.write(conn, toQueue(queue, "written meanwhile"))
	if err := cw.Commit(); err != nil {
		h.t.Fatalf("commit: %v", err)
	}

	for _, want := range []string{"written meanwhile", "committed"} {
		d := h.read(s)
		if string(d.Payload) != want {
			h.t.Fatalf("read %q; want %q (a rolled-back write must never arrive, a committed one only at Commit)", d.Payload, want)
		}
		h.acknowledge(s, d)
	}
	h.nothing(s)
}

func consumeUndeclared(h *harness) {
	queue := h.queue()
	_, err := h.openStream(h.connect(), messaging.StreamConfig{StreamName: queue, BufferCapacity: 1})
	if !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("consuming undeclared queue %s: %v; want an error matching messaging.ErrNotFound", queue, err)
	}
}
