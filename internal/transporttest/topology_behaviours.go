package transporttest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
)

// topologyBehaviours are what every messaging.Declarer does alike.
var topologyBehaviours = []struct {
	name string
	test func(*harness)
}{
	{"DeclaresEveryExchangeKindAndRoutesThroughIt", declaresEveryExchangeKind},
	{"RedeclaringAnExchangeDifferentlyFailsPreconditionFailed", redeclareExchange},
	{"RedeclaringAQueueDifferentlyFailsPreconditionFailed", redeclareQueue},
	{"DeclaresQuorumAndStreamQueuesAndRefusesAnExclusiveQuorumQueue", queueTypes},
	{"BindingWhatIsNotDeclaredFailsNotFound", bindMissing},
	{"InspectCountsReadyMessagesAndConsumersOrFailsNotFound", inspectQueue},
	{"DeleteQueueRemovesItAndItsMessagesAndToleratesAMissingOne", deleteQueue},
	{"AnExclusiveQueueIsLockedToItsConnectionAndGoesWithIt", exclusiveDeclared},
	{"AnAutoDeleteQueueGoesWithItsLastConsumer", autoDeleteQueue},
	{"ADeclarerIsFoundThroughADecorator", declarerThroughDecorator},
	{"DeadLettersPutTheAceMQDeadLetterArgumentsOnTheSourceQueue", deadLetterArguments},
	{"ADefaultStreamAttachesToAnotherAceMQLibrarysTopologyUnchanged", attachesToAnAceMQTopology},
	{"AStreamQueueIsDeclaredDurableSharedAndKept", streamQueueDeclared},
	{"AStreamConfigsStreamQueueIsDeclaredDurableSharedAndKept", streamQueueOfAStreamConfig},
}

func declaresEveryExchangeKind(h *harness) {
	conn := h.connect()
	queue := h.queue()
	if err := h.declarer(conn).DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare queue: %v", err)
	}
	s := h.stream(conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 10})
	for _, c := range []struct {
		kind      messaging.ExchangeKind
		key       string
		arguments map[string]any
		publish   messaging.Dispatch
		miss      messaging.Dispatch
	}{
		{messaging.ExchangeDirect, "order.placed", nil,
			messaging.Dispatch{RoutingKey: "order.placed"}, messaging.Dispatch{RoutingKey: "order.shipped"}},
		{messaging.ExchangeTopic, "order.*", nil,
			messaging.Dispatch{RoutingKey: "order.placed"}, messaging.Dispatch{RoutingKey: "order.placed.late"}},
		{messaging.ExchangeFanout, "", nil,
			messaging.Dispatch{RoutingKey: "anything"}, messaging.Dispatch{}},
		{messaging.ExchangeHeaders, "", map[string]any{"x-match": "all", "region": "eu"},
			messaging.Dispatch{Headers: map[string]any{"region": "eu"}}, messaging.Dispatch{Headers: map[string]any{"region": "us"}}},
	} {
		exchange := h.exchange()
		if err := h.declarer(conn).DeclareExchange(h.context(), messaging.Exchange{Name: exchange, Kind: c.kind, Durable: true}); err != nil {
			h.t.Fatalf("declare %s exchange: %v", c.kind, err)
		}
		if err := h.declarer(conn).Bind(h.context(), messaging.Binding{Exchange: exchange, Queue: queue, Key: c.key, Arguments: c.arguments}); err != nil {
			h.t.Fatalf("bind to the %s exchange: %v", c.kind, err)
		}
		c.publish.Topic, c.publish.Payload, c.publish.Mandatory = exchange, []byte(c.kind), true
		h.write(conn, c.publish)
		if d := h.read(s); string(d.Payload) != string(c.kind) {
			h.t.Fatalf("through the %s exchange read %q", c.kind, d.Payload)
		} else {
			h.acknowledge(s, d)
		}
		if c.kind == messaging.ExchangeFanout {
			continue // a fanout exchange routes everything
		}
		c.miss.Topic, c.miss.Payload, c.miss.Mandatory = exchange, []byte("miss"), true
		w := h.openWriter(conn)
		_, err := w.Write(h.context(), c.miss)
		_ = w.Close()
		if !errors.Is(err, messaging.ErrUnroutable) {
			h.t.Fatalf("a message the %s binding does not match: %v; want messaging.ErrUnroutable", c.kind, err)
		}
	}
}

func redeclareExchange(h *harness) {
	exchange := h.exchange()
	d := h.declarer(h.connect())
	topic := messaging.Exchange{Name: exchange, Kind: messaging.ExchangeTopic, Durable: true}
	if err := d.DeclareExchange(h.context(), topic); err != nil {
		h.t.Fatalf("declare: %v", err)
	}
	if err := d.DeclareExchange(h.context(), topic); err != nil {
		h.t.Fatalf("an identical redeclaration: %v; want it accepted", err)
	}
	for _, differing := range []messaging.Exchange{
		{Name: exchange, Kind: messaging.ExchangeFanout, Durable: true},
		{Name: exchange, Kind: messaging.ExchangeTopic},
	} {
		if err := d.DeclareExchange(h.context(), differing); !errors.Is(err, messaging.ErrPreconditionFailed) {
			h.t.Fatalf("redeclare %+v as %+v: %v; want messaging.ErrPreconditionFailed", topic, differing, err)
		}
	}
	if err := d.DeclareExchange(h.context(), messaging.Exchange{Name: "", Kind: messaging.ExchangeDirect}); err == nil {
		h.t.Fatal("declaring the default exchange succeeded")
	}
}

func redeclareQueue(h *harness) {
	queue := h.queue()
	d := h.declarer(h.connect())
	original := messaging.Queue{Name: queue, Durable: true, Arguments: map[string]any{"x-message-ttl": int32(60000)}}
	if err := d.DeclareQueue(h.context(), original); err != nil {
		h.t.Fatalf("declare: %v", err)
	}
	same := original
	same.Type = messaging.QueueClassic
	same.Arguments = map[string]any{"x-message-ttl": int64(60000)}
	if err := d.DeclareQueue(h.context(), same); err != nil {
		h.t.Fatalf("redeclaring with the same TTL in another integer width and Type classic: %v; want it accepted", err)
	}
	for _, differing := range []messaging.Queue{
		{Name: queue, Durable: true, Type: messaging.QueueQuorum, Arguments: original.Arguments},
		{Name: queue, Durable: true, Arguments: map[string]any{"x-message-ttl": int32(1000)}},
		{Name: queue, Durable: true},
	} {
		if err := d.DeclareQueue(h.context(), differing); !errors.Is(err, messaging.ErrPreconditionFailed) {
			h.t.Fatalf("redeclare %+v as %+v: %v; want messaging.ErrPreconditionFailed", original, differing, err)
		}
	}
}

func queueTypes(h *harness) {
	d := h.declarer(h.connect())
	for _, kind := range []messaging.QueueType{messaging.QueueQuorum, messaging.QueueStream} {
		queue := h.queue()
		if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Type: kind, Durable: true}); err != nil {
			h.t.Fatalf("declare a %s queue: %v", kind, err)
		}
		if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); !errors.Is(err, messaging.ErrPreconditionFailed) {
			h.t.Fatalf("redeclare a %s queue as classic: %v; want messaging.ErrPreconditionFailed", kind, err)
		}
		if _, err := d.InspectQueue(h.context(), queue); err != nil {
			h.t.Fatalf("inspect a %s queue: %v", kind, err)
		}
	}
	exclusive := h.queue()
	err := d.DeclareQueue(h.context(), messaging.Queue{Name: exclusive, Type: messaging.QueueQuorum, Durable: true, Exclusive: true})
	if !errors.Is(err, messaging.ErrPreconditionFailed) {
		h.t.Fatalf("declare an exclusive quorum queue: %v; want messaging.ErrPreconditionFailed", err)
	}
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: exclusive, Type: "lazy", Durable: true}); err == nil {
		h.t.Fatal("declaring a queue of an unknown type succeeded")
	}
}

func bindMissing(h *harness) {
	d := h.declarer(h.connect())
	queue, exchange := h.queue(), h.exchange()
	if err := d.Bind(h.context(), messaging.Binding{Exchange: exchange, Queue: queue, Key: "k"}); !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("bind a missing queue to a missing exchange: %v; want messaging.ErrNotFound", err)
	}
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare queue: %v", err)
	}
	if err := d.Bind(h.context(), messaging.Binding{Exchange: exchange, Queue: queue, Key: "k"}); !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("bind to a missing exchange: %v; want messaging.ErrNotFound", err)
	}
	if err := d.InspectExchange(h.context(), exchange); !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("inspect a missing exchange: %v; want messaging.ErrNotFound", err)
	}
	if err := d.DeclareExchange(h.context(), messaging.Exchange{Name: exchange, Kind: messaging.ExchangeDirect, Durable: true}); err != nil {
		h.t.Fatalf("declare exchange: %v", err)
	}
	if err := d.InspectExchange(h.context(), exchange); err != nil {
		h.t.Fatalf("inspect a declared exchange: %v", err)
	}
	missing := h.queue()
	if err := d.Bind(h.context(), messaging.Binding{Exchange: exchange, Queue: missing, Key: "k"}); !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("bind a missing queue: %v; want messaging.ErrNotFound", err)
	}
}

func inspectQueue(h *harness) {
	conn := h.connect()
	d := h.declarer(conn)
	queue := h.queue()
	if _, err := d.InspectQueue(h.context(), queue); !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("inspect a missing queue: %v; want messaging.ErrNotFound", err)
	}
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare queue: %v", err)
	}
	h.write(conn, toQueue(queue, "one"), toQueue(queue, "two"))
	h.awaitState(d, queue, messaging.QueueState{Name: queue, Messages: 2, Consumers: 0})
	s := h.stream(conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 10})
	h.read(s)
	h.read(s)
	// Delivered and unacknowledged messages are not ready.
	h.awaitState(d, queue, messaging.QueueState{Name: queue, Messages: 0, Consumers: 1})
}

// awaitState inspects queue until it reports want (a broker's counts may lag
// a moment behind a confirm), failing after the suite's wait.
func (h *harness) awaitState(d messaging.Declarer, queue string, want messaging.QueueState) {
	h.t.Helper()
	h.until(func() (bool, string) {
		got, err := d.InspectQueue(h.context(), queue)
		return err == nil && got == want, fmt.Sprintf("inspect %s = %+v, %v; want %+v", queue, got, err, want)
	})
}

// awaitGone inspects queue until it is not found.
func (h *harness) awaitGone(d messaging.Declarer, queue, why string) {
	h.t.Helper()
	h.until(func() (bool, string) {
		_, err := d.InspectQueue(h.context(), queue)
		return errors.Is(err, messaging.ErrNotFound), fmt.Sprintf("queue %s still there %s: %v", queue, why, err)
	})
}

// until calls check until it reports done, and fails after the suite's wait
// with what check saw last. It polls in real time: a broker's counts change
// on the broker's own clock, a moment behind the calls that change them.
func (h *harness) until(check func() (done bool, saw string)) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		done, saw := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal(saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func deleteQueue(h *harness) {
	conn := h.connect()
	d := h.declarer(conn)
	queue := h.queue()
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare queue: %v", err)
	}
	h.write(conn, toQueue(queue, "doomed"))
	if err := d.DeleteQueue(h.context(), queue); err != nil {
		h.t.Fatalf("delete queue: %v", err)
	}
	if _, err := d.InspectQueue(h.context(), queue); !errors.Is(err, messaging.ErrNotFound) {
		h.t.Fatalf("inspect a deleted queue: %v; want messaging.ErrNotFound", err)
	}
	if err := d.DeleteQueue(h.context(), queue); err != nil {
		h.t.Fatalf("delete a missing queue: %v; want success", err)
	}
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare the queue again: %v", err)
	}
	h.awaitState(d, queue, messaging.QueueState{Name: queue}) // its messages went with it
}

func exclusiveDeclared(h *harness) {
	owner, other := h.connect(), h.connect()
	queue := h.queue()
	exclusive := messaging.Queue{Name: queue, Exclusive: true, AutoDelete: true}
	if err := h.declarer(owner).DeclareQueue(h.context(), exclusive); err != nil {
		h.t.Fatalf("declare an exclusive queue: %v", err)
	}
	if err := h.declarer(owner).DeclareQueue(h.context(), exclusive); err != nil {
		h.t.Fatalf("its owner redeclaring it: %v; want it accepted", err)
	}
	if err := h.declarer(other).DeclareQueue(h.context(), exclusive); !errors.Is(err, messaging.ErrResourceLocked) {
		h.t.Fatalf("another connection declaring it: %v; want messaging.ErrResourceLocked", err)
	}
	if _, err := h.declarer(other).InspectQueue(h.context(), queue); !errors.Is(err, messaging.ErrResourceLocked) {
		h.t.Fatalf("another connection inspecting it: %v; want messaging.ErrResourceLocked", err)
	}
	if err := owner.Close(); err != nil {
		h.t.Fatalf("close the owner: %v", err)
	}
	h.awaitGone(h.admin, queue, "after its owner closed")
}

func autoDeleteQueue(h *harness) {
	conn := h.connect()
	queue := h.queue()
	d := h.declarer(conn)
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: queue, Durable: true, AutoDelete: true}); err != nil {
		h.t.Fatalf("declare an auto-delete queue: %v", err)
	}
	h.awaitState(d, queue, messaging.QueueState{Name: queue}) // no consumer yet: it stays
	first := h.stream(conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 1})
	second := h.stream(conn, messaging.StreamConfig{StreamName: queue, BufferCapacity: 1})
	if err := first.Close(); err != nil {
		h.t.Fatalf("close the first consumer: %v", err)
	}
	h.awaitState(d, queue, messaging.QueueState{Name: queue, Consumers: 1})
	if err := second.Close(); err != nil {
		h.t.Fatalf("close the last consumer: %v", err)
	}
	h.awaitGone(d, queue, "after its last consumer went")
}

// decorated is a decorator that embeds a Connection, as serialization does.
type decorated struct{ messaging.Connection }

func (d decorated) Unwrap() messaging.Connection { return d.Connection }

func declarerThroughDecorator(h *harness) {
	conn := h.connect()
	wrapped := messaging.Connection(decorated{decorated{conn}})
	if _, hidden := wrapped.(messaging.Declarer); hidden {
		h.t.Fatal("the decorator offers Declarer itself; the test would prove nothing")
	}
	d, ok := messaging.As[messaging.Declarer](wrapped)
	if !ok {
		h.t.Fatal("messaging.As found no Declarer beneath two decorators")
	}
	queue := h.queue()
	if err := d.DeclareQueue(context.Background(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		h.t.Fatalf("declare through the decorators: %v", err)
	}
}

// acemqQueue is a source queue as every AceMQ library declares it with dead
// letters on: durable, of queueType, dead-lettering to acemq.dlx under
// {queue}.dlq.
func acemqQueue(name string, queueType messaging.QueueType) messaging.Queue {
	return messaging.Queue{Name: name, Type: queueType, Durable: true, Arguments: map[string]any{
		"x-dead-letter-exchange":    "acemq.dlx",
		"x-dead-letter-routing-key": name + ".dlq",
	}}
}

func deadLetterArguments(h *harness) {
	queue := h.queue()
	h.declared(h.connect(), queue, 1) // no dead letters: no arguments
	deadLettered := h.queue()
	h.stream(h.connect(), messaging.StreamConfig{StreamName: deadLettered, EstablishTopology: true, DeadLetters: true, BufferCapacity: 1})
	replicated := h.queue()
	h.stream(h.connect(), messaging.StreamConfig{StreamName: replicated, EstablishTopology: true, DeadLetters: true, Replication: true, BufferCapacity: 1})

	for _, c := range []struct {
		queue messaging.Queue
		want  error
	}{
		{messaging.Queue{Name: queue, Durable: true}, nil},
		{acemqQueue(deadLettered, messaging.QueueClassic), nil},
		{messaging.Queue{Name: deadLettered, Durable: true}, messaging.ErrPreconditionFailed},
		{acemqQueue(replicated, messaging.QueueQuorum), nil},
		{acemqQueue(replicated, messaging.QueueClassic), messaging.ErrPreconditionFailed},
		{messaging.Queue{Name: deadLettered + ".dlq", Durable: true}, nil}, // classic, durable, no arguments
		{messaging.Queue{Name: deadLettered + ".parked", Durable: true}, nil},
		{messaging.Queue{Name: replicated + ".dlq", Durable: true}, nil},
	} {
		if err := h.admin.DeclareQueue(h.context(), c.queue); !errors.Is(err, c.want) {
			h.t.Fatalf("declare %+v after the stream opened: %v; want %v", c.queue, err, c.want)
		}
	}
}

// A consumer with default options attaches to what another AceMQ library
// declared (a topic exchange, a quorum queue with the dead-letter arguments, a
// binding with a pattern) without a refusal and without changing any of it.
func attachesToAnAceMQTopology(h *harness) {
	exchange, queue := h.exchange(), h.queue()
	h.declareExchange(exchange, messaging.ExchangeTopic)
	declared := acemqQueue(queue, messaging.QueueQuorum)
	if err := h.admin.DeclareQueue(h.context(), declared); err != nil {
		h.t.Fatalf("declare the queue as another AceMQ library does: %v", err)
	}
	h.bind(queue, exchange, "order.*")

	conn := h.connect()
	s, err := h.openStream(conn, messaging.StreamConfig{
		StreamName: queue, Topics: []string{exchange}, EstablishTopology: true, DeadLetters: true, BufferCapacity: 1,
	})
	if err != nil {
		h.t.Fatalf("a default stream on another AceMQ library's topology: %v; want it to attach", err)
	}
	h.write(conn,
		messaging.Dispatch{Topic: exchange, RoutingKey: "order.placed", Payload: []byte("placed"), Mandatory: true},
		messaging.Dispatch{Topic: exchange, RoutingKey: "order.placed.late", Payload: []byte("late")}, // order.* does not match it
		messaging.Dispatch{Topic: exchange, RoutingKey: "", Payload: []byte("empty key")},             // no binding with key "" was added
	)
	d := h.read(s)
	if string(d.Payload) != "placed" {
		h.t.Fatalf("read %q; want the message routed by order.*", d.Payload)
	}
	h.acknowledge(s, d)
	h.nothing(s)

	if err := h.admin.DeclareExchange(h.context(), messaging.Exchange{Name: exchange, Kind: messaging.ExchangeTopic, Durable: true}); err != nil {
		h.t.Fatalf("the exchange after the stream opened: %v; want it still topic and durable", err)
	}
	if err := h.admin.DeclareQueue(h.context(), declared); err != nil {
		h.t.Fatalf("the queue after the stream opened: %v; want it still quorum with the dead-letter arguments", err)
	}
}

// sharedStream asserts that queue exists as a stream is declared: another
// connection may inspect it (it is not exclusive), and a durable stream
// redeclared is the same queue.
func (h *harness) sharedStream(queue string) {
	h.t.Helper()
	if _, err := h.admin.InspectQueue(h.context(), queue); err != nil {
		h.t.Fatalf("inspect stream %s from another connection: %v; want it declared and shared", queue, err)
	}
	durable := messaging.Queue{Name: queue, Type: messaging.QueueStream, Durable: true}
	if err := h.admin.DeclareQueue(h.context(), durable); err != nil {
		h.t.Fatalf("redeclare stream %s durable: %v; want it the same queue", queue, err)
	}
}

// A stream queue declared as a Go literal (Durable left false) or said to be
// exclusive and auto-delete is declared durable, shared and kept, where the
// broker would refuse it with words that do not mention streams.
func streamQueueDeclared(h *harness) {
	d := h.declarer(h.connect())
	literal, flagged := h.queue(), h.queue()
	if err := d.DeclareQueue(h.context(), messaging.Queue{Name: literal, Type: messaging.QueueStream}); err != nil {
		h.t.Fatalf("declare a stream queue with Durable false: %v; want it declared durable", err)
	}
	h.sharedStream(literal)
	byArgument := messaging.Queue{Name: flagged, Exclusive: true, AutoDelete: true, Arguments: map[string]any{messaging.QueueTypeArgument: "stream"}}
	if err := d.DeclareQueue(h.context(), byArgument); err != nil {
		h.t.Fatalf("declare an exclusive, auto-delete stream queue: %v; want it declared shared and kept", err)
	}
	h.sharedStream(flagged)
}

// A stream config asking for a stream queue that is transient, exclusive and
// auto-delete, with dead letters, declares a durable, shared stream without
// the dead-letter arguments a stream refuses. (The in-memory transport then
// refuses to read a stream; the queue is declared all the same.)
func streamQueueOfAStreamConfig(h *harness) {
	queue := h.queue()
	config := messaging.StreamConfig{
		StreamName: queue, EstablishTopology: true, DeadLetters: true, BufferCapacity: 1,
		QueueType: messaging.QueueStream, TransientStream: true, ExclusiveStream: true, AutoDeleteStream: true,
	}
	if _, err := h.openStream(h.connect(), config); errors.Is(err, messaging.ErrPreconditionFailed) {
		h.t.Fatalf("open a stream over a stream queue: %v; want the queue declared as a stream is", err)
	}
	h.sharedStream(queue)
}
