package transporttest

import (
	"errors"

	"github.com/warrenmq/messaging"
)

// streamConfigBehaviours are what a StreamConfig declares and how it reads,
// alike on every transport.
var streamConfigBehaviours = []struct {
	name string
	test func(*harness)
}{
	{"StreamBindingsOfEveryKindRouteToTheQueue", streamBindings},
	{"ABindingThatRoutesByKeyDeclaresATopicExchangeAndATopicStaysFanout", keyedBindingIsATopic},
	{"AKeyedBindingOnAnExistingFanoutExchangeUsesItAsItIsAndBindsNothing", keyedBindingOnAFanout},
	{"AStreamDeclaresItsQueueTypeAndArguments", streamQueueType},
	{"AnAutoDeleteStreamQueueGoesWithItsConsumer", autoDeleteStream},
	{"ATransientStreamQueueIsNotDurable", transientStream},
	{"APollingStreamReadsOneAtATimeAndSaysWhenEmpty", pollingStream},
}

func streamBindings(h *harness) {
	queue := h.queue()
	topic, direct, headers := h.exchange(), h.exchange(), h.exchange()
	conn := h.connect()
	s := h.stream(conn, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, BufferCapacity: 10, Bindings: []messaging.StreamBinding{
		{Exchange: topic, Kind: messaging.ExchangeTopic, Key: "order.*"},
		{Exchange: direct, Kind: messaging.ExchangeDirect, Key: "refund"},
		{Exchange: headers, Kind: messaging.ExchangeHeaders, Arguments: map[string]any{"x-match": "all", "region": "eu"}},
	}})
	h.write(conn,
		messaging.Dispatch{Topic: topic, RoutingKey: "order.placed", Payload: []byte("topic"), Mandatory: true},
		messaging.Dispatch{Topic: direct, RoutingKey: "refund", Payload: []byte("direct"), Mandatory: true},
		messaging.Dispatch{Topic: headers, Headers: map[string]any{"region": "eu"}, Payload: []byte("headers"), Mandatory: true},
	)
	for _, want := range []string{"topic", "direct", "headers"} {
		d := h.read(s)
		if string(d.Payload) != want {
			h.t.Fatalf("read %q; want %q", d.Payload, want)
		}
		h.acknowledge(s, d)
	}
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()
	for _, miss := range []messaging.Dispatch{
		{Topic: topic, RoutingKey: "order.placed.late"},
		{Topic: direct, RoutingKey: "refunds"},
		{Topic: headers, Headers: map[string]any{"region": "us"}},
	} {
		miss.Mandatory, miss.Payload = true, []byte("miss")
		if _, err := w.Write(h.context(), miss); !errors.Is(err, messaging.ErrUnroutable) {
			h.t.Fatalf("a message no binding matches (%s %q %v): %v; want messaging.ErrUnroutable", miss.Topic, miss.RoutingKey, miss.Headers, err)
		}
	}
}

func streamQueueType(h *harness) {
	queue := h.queue()
	arguments := map[string]any{"x-max-length": int32(100)}
	h.stream(h.connect(), messaging.StreamConfig{StreamName: queue, EstablishTopology: true, QueueType: messaging.QueueQuorum, QueueArguments: arguments, BufferCapacity: 1})
	if err := h.admin.DeclareQueue(h.context(), messaging.Queue{Name: queue, Type: messaging.QueueQuorum, Durable: true, Arguments: arguments}); err != nil {
		h.t.Fatalf("the queue as quorum with x-max-length: %v; want it declared so", err)
	}
	if err := h.admin.DeclareQueue(h.context(), messaging.Queue{Name: queue, Type: messaging.QueueQuorum, Durable: true}); !errors.Is(err, messaging.ErrPreconditionFailed) {
		h.t.Fatalf("the queue as quorum without x-max-length: %v; want messaging.ErrPreconditionFailed", err)
	}
}

func autoDeleteStream(h *harness) {
	queue := h.queue()
	s := h.stream(h.connect(), messaging.StreamConfig{StreamName: queue, EstablishTopology: true, AutoDeleteStream: true, BufferCapacity: 1})
	h.awaitState(h.admin, queue, messaging.QueueState{Name: queue, Consumers: 1})
	if err := s.Close(); err != nil {
		h.t.Fatalf("close the stream: %v", err)
	}
	h.awaitGone(h.admin, queue, "after its only consumer closed")
}

func transientStream(h *harness) {
	queue := h.queue()
	h.stream(h.connect(), messaging.StreamConfig{StreamName: queue, EstablishTopology: true, TransientStream: true, BufferCapacity: 1})
	if err := h.admin.DeclareQueue(h.context(), messaging.Queue{Name: queue}); err != nil {
		h.t.Fatalf("the queue as non-durable: %v; want it declared so", err)
	}
	if err := h.admin.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); !errors.Is(err, messaging.ErrPreconditionFailed) {
		h.t.Fatalf("the queue as durable: %v; want messaging.ErrPreconditionFailed", err)
	}
}

func pollingStream(h *harness) {
	queue := h.queue()
	conn := h.connect()
	if err := h.admin.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare queue: %v", err)
	}
	poll := messaging.StreamConfig{StreamName: queue, Poll: true}
	s := h.stream(conn, poll)
	var d messaging.Delivery
	if err := s.Read(h.context(), &d); !errors.Is(err, messaging.ErrQueueEmpty) {
		h.t.Fatalf("polling an empty queue: %v; want messaging.ErrQueueEmpty at once", err)
	}
	h.write(conn, toQueue(queue, "one"), toQueue(queue, "two"))
	h.awaitState(h.admin, queue, messaging.QueueState{Name: queue, Messages: 2}) // a poller is no consumer
	first, second := h.read(s), h.read(s)
	if string(first.Payload) != "one" || string(second.Payload) != "two" {
		h.t.Fatalf("polled %q then %q; want one then two", first.Payload, second.Payload)
	}
	if err := s.Read(h.context(), &d); !errors.Is(err, messaging.ErrQueueEmpty) {
		h.t.Fatalf("polling after the last message: %v; want messaging.ErrQueueEmpty", err)
	}
	h.acknowledge(s, first)
	if err := s.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
	again := h.stream(conn, poll)
	if d := h.read(again); string(d.Payload) != "two" || !d.Redelivered {
		h.t.Fatalf("after closing, polled %q (redelivered %t); want the unacknowledged two, redelivered", d.Payload, d.Redelivered)
	}
}

// unroutable asserts that a mandatory dispatch reaches no queue.
func (h *harness) unroutable(conn messaging.Connection, d messaging.Dispatch, why string) {
	h.t.Helper()
	w := h.openWriter(conn)
	defer func() { _ = w.Close() }()
	d.Mandatory = true
	if _, err := w.Write(h.context(), d); !errors.Is(err, messaging.ErrUnroutable) {
		h.t.Fatalf("%s (%s %q): %v; want messaging.ErrUnroutable", why, d.Topic, d.RoutingKey, err)
	}
}

// A binding with a routing key and no kind declares a topic exchange, as the
// AceMQ family declares a key-routed topic; a Topics entry stays a fanout
// exchange, as smarty/messaging v4 declares it.
func keyedBindingIsATopic(h *harness) {
	queue, orders, audit := h.queue(), h.exchange(), h.exchange()
	conn := h.connect()
	s := h.stream(conn, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, BufferCapacity: 10,
		Topics: []string{audit}, Bindings: []messaging.StreamBinding{{Exchange: orders, Key: "order.*"}}})
	h.write(conn,
		messaging.Dispatch{Topic: orders, RoutingKey: "order.placed", Payload: []byte("placed"), Mandatory: true},
		messaging.Dispatch{Topic: audit, RoutingKey: "anything", Payload: []byte("audited"), Mandatory: true},
	)
	for _, want := range []string{"placed", "audited"} {
		d := h.read(s)
		if string(d.Payload) != want {
			h.t.Fatalf("read %q; want %q", d.Payload, want)
		}
		h.acknowledge(s, d)
	}
	h.unroutable(conn, messaging.Dispatch{Topic: orders, RoutingKey: "invoice.sent", Payload: []byte("miss")}, "a key order.* does not match")
	if err := h.admin.DeclareExchange(h.context(), messaging.Exchange{Name: orders, Kind: messaging.ExchangeTopic, Durable: true}); err != nil {
		h.t.Fatalf("the keyed binding's exchange as topic: %v; want it declared topic", err)
	}
	if err := h.admin.DeclareExchange(h.context(), messaging.Exchange{Name: audit, Kind: messaging.ExchangeFanout, Durable: true}); err != nil {
		h.t.Fatalf("the topic's exchange as fanout: %v; want it declared fanout", err)
	}
}

// An exchange that exists as fanout where a keyed binding would declare a
// topic exchange is used as it is (the transport logs a WARN), and the queue is
// not bound to it: on a fanout exchange the key would mean every message.
func keyedBindingOnAFanout(h *harness) {
	queue, orders := h.queue(), h.exchange()
	h.declareExchange(orders, messaging.ExchangeFanout)
	conn := h.connect()
	h.stream(conn, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, BufferCapacity: 1,
		Bindings: []messaging.StreamBinding{{Exchange: orders, Key: "order.*"}}})
	h.unroutable(conn, messaging.Dispatch{Topic: orders, RoutingKey: "order.placed", Payload: []byte("placed")}, "the queue was bound to the fanout exchange")
	if err := h.admin.DeclareExchange(h.context(), messaging.Exchange{Name: orders, Kind: messaging.ExchangeFanout, Durable: true}); err != nil {
		h.t.Fatalf("the exchange after the stream opened: %v; want it still fanout", err)
	}
}
