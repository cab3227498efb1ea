package rabbitmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// BenchmarkWrite publishes persistent, mandatory 1 KiB dispatches to a durable
// queue on the local broker, 1 and 100 per Write (cmd/bench's roundtrip and
// publish shapes); b.N counts messages. With -benchmem it shows the
// allocations the publish path costs per message, broker client included.
func BenchmarkWrite(b *testing.B) {
	url := testenv.Broker(b)
	queue := testenv.Name(b, "bench-write")
	setup, err := amqp.Dial(url)
	if err != nil {
		b.Fatalf("dial %s: %v; `make services` starts RabbitMQ", url, err)
	}
	defer func() { _ = setup.Close() }()
	ch, err := setup.Channel()
	if err != nil {
		b.Fatalf("open channel: %v", err)
	}
	if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		b.Fatalf("declare %s: %v", queue, err)
	}
	defer func() { _, _ = ch.QueueDelete(queue, false, false, false) }()

	connector := rabbitmq.New(rabbitmq.Options.Address(url))
	defer func() { _ = connector.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := connector.Connect(ctx)
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	w, err := conn.Writer(ctx)
	if err != nil {
		b.Fatalf("open writer: %v", err)
	}
	defer func() { _ = w.Close() }()

	for _, perWrite := range []int{1, 100} {
		b.Run(fmt.Sprintf("%d-per-write", perWrite), func(b *testing.B) {
			dispatches := make([]messaging.Dispatch, perWrite)
			for i := range dispatches {
				dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true,
					ContentType: "application/octet-stream", Payload: make([]byte, 1024)}
			}
			b.ReportAllocs()
			for sent := 0; sent < b.N; sent += perWrite {
				if _, err := w.Write(ctx, dispatches[:min(perWrite, b.N-sent)]...); err != nil {
					b.Fatalf("write: %v", err)
				}
			}
		})
	}
	if _, err := ch.QueuePurge(queue, false); err != nil {
		b.Fatalf("purge %s: %v", queue, err)
	}
}
