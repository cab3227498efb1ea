package transporttest

import (
	"errors"

	"github.com/warrenmq/messaging"
)

// routedBy publishes each key mandatory to exchange and reports which landed.
func (h *harness) routedBy(conn messaging.Connection, exchange string, keys ...string) map[string]bool {
	h.t.Helper()
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()
	routed := map[string]bool{}
	for _, key := range keys {
		n, err := w.Write(h.context(), messaging.Dispatch{Topic: exchange, RoutingKey: key, Payload: []byte(key), Mandatory: true})
		switch {
		case err == nil && n == 1:
			routed[key] = true
		case errors.Is(err, messaging.ErrUnroutable):
		default:
			h.t.Fatalf("publish %q to %s: %d, %v", key, exchange, n, err)
		}
	}
	return routed
}

func (h *harness) boundQueue(conn messaging.Connection, kind messaging.ExchangeKind, pattern string) (string, string, messaging.Stream) {
	h.t.Helper()
	queue, exchange := h.queue(), h.exchange()
	s := h.declared(conn, queue, 20)
	h.declareExchange(exchange, kind)
	h.bind(queue, exchange, pattern)
	return queue, exchange, s
}

func topicRouting(h *harness) {
	conn := h.connect()
	_, exchange, s := h.boundQueue(conn, "topic", "orders.#")
	_ = s
	routed := h.routedBy(conn, exchange, "orders", "orders.placed", "orders.placed.eu", "users.placed", "ordersx", "")
	want := map[string]bool{"orders": true, "orders.placed": true, "orders.placed.eu": true}
	if len(routed) != len(want) {
		h.t.Fatalf("topic orders.# routed %v; want exactly %v", routed, want)
	}
	for key := range want {
		if !routed[key] {
			h.t.Fatalf("topic orders.# routed %v; want exactly %v", routed, want)
		}
	}

	_, star, _ := h.boundQueue(conn, "topic", "*.placed")
	if routed := h.routedBy(conn, star, "orders.placed", "placed", "a.b.placed"); len(routed) != 1 || !routed["orders.placed"] {
		h.t.Fatalf("topic *.placed routed %v; want only orders.placed", routed)
	}
}

func directRouting(h *harness) {
	conn := h.connect()
	_, exchange, _ := h.boundQueue(conn, "direct", "order.placed")
	if routed := h.routedBy(conn, exchange, "order.placed", "order.*", "order", ""); len(routed) != 1 || !routed["order.placed"] {
		h.t.Fatalf("direct routed %v; want only order.placed", routed)
	}
}

func undeclaredExchange(h *harness) {
	missing := h.exchange()
	w := h.openWriter(h.connect())
	defer func() { _ = w.Close() }()
	n, err := w.Write(h.context(), messaging.Dispatch{Topic: missing, RoutingKey: "k", Payload: []byte("x"), Mandatory: true})
	if n != 0 || !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("publish to undeclared exchange = %d, %v; want 0 and an error matching messaging.ErrNotFound", n, err)
	}
}

func exclusiveQueue(h *harness) {
	queue := h.queue()
	owner := h.connect()
	h.stream(owner, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, ExclusiveStream: true, BufferCapacity: 1})
	_, err := h.openStream(h.connect(), messaging.StreamConfig{StreamName: queue, BufferCapacity: 1})
	if !errors.Is(err, messaging.ErrResourceLocked) {
		h.t.Fatalf("consuming another connection's exclusive queue: %v; want an error matching messaging.ErrResourceLocked", err)
	}
}

func closedFailClosed(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 1)
	if err := s.Close(); err != nil {
		h.t.Fatalf("close stream: %v", err)
	}
	var d messaging.Delivery
	if err := s.Read(h.context(), &d); !errors.Is(err, messaging.ErrClosed) {
		h.t.Errorf("read after close: %v; want messaging.ErrClosed", err)
	}
	w := h.openWriter(conn)
	if err := w.Close(); err != nil {
		h.t.Fatalf("close writer: %v", err)
	}
	if _, err := w.Write(h.context(), toQueue(queue, "x")); !errors.Is(err, messaging.ErrClosed) {
		h.t.Errorf("write after close: %v; want messaging.ErrClosed", err)
	}
	if err := conn.Close(); err != nil {
		h.t.Fatalf("close connection: %v", err)
	}
	if _, err := conn.Writer(h.context()); !errors.Is(err, messaging.ErrClosed) {
		h.t.Errorf("open a writer on a closed connection: %v; want messaging.ErrClosed", err)
	}
}

func unknownAcknowledgement(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 2)
	h.write(conn, toQueue(queue, "1"), toQueue(queue, "2"))
	one, two := h.read(s), h.read(s)
	h.acknowledge(s, one)
	if err := s.Acknowledge(h.context(), two, one); err == nil {
		h.t.Fatalf("acknowledging delivery %d twice succeeded; want an error", one.DeliveryID)
	}
	h.acknowledge(s, two) // the failed call acknowledged nothing, and the stream still works
	h.nothing(s)
}

// requeueOne returns one delivery of three to its queue through the stream's
// messaging.Requeuer, found with messaging.As: only that one comes back,
// marked redelivered, and the same stream goes on reading.
func requeueOne(h *harness) {
	queue := h.queue()
	conn := h.connect()
	s := h.declared(conn, queue, 10)
	requeuer, ok := messaging.As[messaging.Requeuer](s)
	if !ok {
		h.t.Fatalf("the stream %T implements no messaging.Requeuer", s)
	}
	h.write(conn, toQueue(queue, "A"), toQueue(queue, "B"), toQueue(queue, "C"))
	a, b, c := h.read(s), h.read(s), h.read(s)
	if got := string(a.Payload) + string(b.Payload) + string(c.Payload); got != "ABC" {
		h.t.Fatalf("read %q; want A, B, C in order", got)
	}
	if err := requeuer.Requeue(h.context(), b); err != nil {
		h.t.Fatalf("requeue B: %v", err)
	}
	h.acknowledge(s, a, c)

	again := h.read(s)
	if string(again.Payload) != "B" || !again.Redelivered {
		h.t.Fatalf("after requeue read %q (redelivered %t); want B, redelivered", again.Payload, again.Redelivered)
	}
	h.acknowledge(s, again)
	h.write(conn, toQueue(queue, "D"))
	if d := h.read(s); string(d.Payload) != "D" || d.Redelivered {
		h.t.Fatalf("then read %q (redelivered %t); want D, not redelivered", d.Payload, d.Redelivered)
	} else {
		h.acknowledge(s, d)
	}
	h.nothing(s)

	if err := requeuer.Requeue(h.context(), again); err == nil {
		h.t.Fatalf("requeue of a delivery acknowledged already succeeded; want an error")
	}
	if err := s.Close(); err != nil {
		h.t.Fatalf("close stream: %v", err)
	}
	if err := requeuer.Requeue(h.context(), again); !errors.Is(err, messaging.ErrClosed) {
		h.t.Fatalf("requeue after the stream closed = %v; want an error matching messaging.ErrClosed", err)
	}
}
