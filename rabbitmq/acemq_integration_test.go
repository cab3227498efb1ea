package rabbitmq_test

import (
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
)

// Another AceMQ library declared the topology: a topic exchange, a quorum
// queue with the dead-letter arguments, a binding order.*. A subscription with
// default options (topics, topology, dead letters) consumes it without a
// refusal and without changing it, with one WARN per difference.
func TestADefaultStreamAttachesToAQuorumQueueAnotherAceMQLibraryDeclared(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	exchange := b.exchange("orders", amqp.ExchangeTopic)
	queue := exchange + ".new"
	if err := b.do(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclare(queue, true, false, false, false, amqp.Table{
			"x-queue-type":              "quorum",
			"x-dead-letter-exchange":    "acemq.dlx",
			"x-dead-letter-routing-key": queue + ".dlq",
		})
		return err
	}); err != nil {
		t.Fatalf("declare the queue as another AceMQ library does: %v", err)
	}
	for _, name := range []string{queue, queue + ".dlq", queue + ".parked"} {
		b.deleteQueueAtEnd(name)
	}
	b.bind(queue, "order.*", exchange)

	logs := &testenv.LogBuffer{}
	ctx, conn, reader := readerOn(t, url, logs)
	stream, err := reader.Stream(ctx, messaging.StreamConfig{
		StreamName: queue, Topics: []string{exchange}, EstablishTopology: true, DeadLetters: true, BufferCapacity: 1,
	})
	if err != nil {
		t.Fatalf("a default stream on another AceMQ library's topology: %v; want it to attach", err)
	}

	line := listedQueue(t, queue)
	t.Logf("rabbitmqctl list_queues name type arguments: %s", line)
	for _, want := range []string{"\tquorum\t", `{"x-dead-letter-exchange","acemq.dlx"}`, `{"x-dead-letter-routing-key","` + queue + `.dlq"}`} {
		if !strings.Contains(line, want) {
			t.Fatalf("rabbitmqctl lists %q; want it to contain %s (the queue unchanged)", line, want)
		}
	}

	w, err := conn.Writer(ctx)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	if _, err := w.Write(ctx, messaging.Dispatch{Topic: exchange, RoutingKey: "order.placed", Payload: []byte("placed"), Mandatory: true}); err != nil {
		t.Fatalf("publish order.placed: %v", err)
	}
	if _, err := w.Write(ctx, messaging.Dispatch{Topic: exchange, RoutingKey: "", Payload: []byte("empty key"), Mandatory: true}); err == nil {
		t.Fatal("a message with key \"\" was routed: the stream bound the queue to the topic exchange with key \"\"")
	}
	var d messaging.Delivery
	if err := stream.Read(ctx, &d); err != nil || string(d.Payload) != "placed" {
		t.Fatalf("read = %q, %v; want the message routed by order.*", d.Payload, err)
	}

	warnings := strings.Count(logs.String(), "level=WARN")
	for _, want := range []string{
		`declare exchange \"` + exchange + `\": it already exists with other properties`,
		`declare queue \"` + queue + `\": it already exists with other properties`,
		"inequivalent arg 'type' for exchange",
		"inequivalent arg 'x-queue-type' for queue",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("the logs do not say %q:\n%s", want, logs.String())
		}
	}
	if warnings != 2 {
		t.Fatalf("%d WARN lines; want one for the exchange and one for the queue:\n%s", warnings, logs.String())
	}
}

// listedQueue is the rabbitmqctl list_queues line (name, type, arguments) of queue.
func listedQueue(t *testing.T, queue string) string {
	t.Helper()
	return listed(t, "queues", queue, "type", "arguments")
}

// A stream that declares its queue with dead letters on declares it as every
// AceMQ library does: classic by default, quorum with Replication, with the
// dead-letter arguments; .dlq and .parked classic, durable, without arguments.
func TestADeclaredSourceQueueCarriesTheAceMQDeadLetterArguments(t *testing.T) {
	url := testenv.Broker(t)
	b := newBroker(t, url)
	ctx, _, reader := readerOn(t, url, nil)
	for _, replicated := range []bool{false, true} {
		queue := testenv.Name(t, "source")
		for _, name := range []string{queue, queue + ".dlq", queue + ".parked"} {
			b.deleteQueueAtEnd(name)
		}
		if _, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, EstablishTopology: true, DeadLetters: true, Replication: replicated}); err != nil {
			t.Fatalf("open stream: %v", err)
		}
		line := listedQueue(t, queue)
		t.Logf("rabbitmqctl list_queues name type arguments: %s", line)
		wantType := "\tclassic\t[{"
		if replicated {
			wantType = "\tquorum\t"
		}
		for _, want := range []string{wantType, `{"x-dead-letter-exchange","acemq.dlx"}`, `{"x-dead-letter-routing-key","` + queue + `.dlq"}`} {
			if !strings.Contains(line, want) {
				t.Fatalf("rabbitmqctl lists %q; want it to contain %s", line, want)
			}
		}
		for _, side := range []string{queue + ".dlq", queue + ".parked"} {
			if line := listedQueue(t, side); !strings.HasSuffix(line, "\tclassic\t[]") {
				t.Fatalf("rabbitmqctl lists %q; want a classic queue without arguments", line)
			}
		}
	}
}
