package batch_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/memory"
)

// One Write is one confirmed batch: it returns how many landed, and a
// mandatory message that reaches no queue fails alone, matching
// messaging.ErrUnroutable, while the writer keeps its connection. The
// in-memory broker stands in for rabbitmq.New(...) here.
func ExampleWriter_Write() {
	broker := memory.New()
	defer broker.Close()
	_ = broker.DeclareQueue("invoices", memory.QueueOptions{Durable: true})

	writer := batch.New(broker) // dials on the first Write, redials after a lost connection
	defer writer.Close()

	ctx := context.Background()
	landed, err := writer.Write(ctx,
		messaging.Dispatch{RoutingKey: "invoices", MessageType: "invoice-requested", Payload: []byte("o-7"), Mandatory: true},
		messaging.Dispatch{RoutingKey: "invoices", MessageType: "invoice-requested", Payload: []byte("o-8"), Mandatory: true},
	)
	fmt.Println("landed:", landed, err)

	landed, err = writer.Write(ctx,
		messaging.Dispatch{RoutingKey: "invoices", Payload: []byte("o-9"), Mandatory: true},
		messaging.Dispatch{RoutingKey: "no-such-queue", Payload: []byte("o-10"), Mandatory: true},
	)
	fmt.Println("landed:", landed, "unroutable:", errors.Is(err, messaging.ErrUnroutable))
	fmt.Println("queued:", broker.MessageCount("invoices"))
	// Output:
	// landed: 2 <nil>
	// landed: 1 unroutable: true
	// queued: 3
}

// Declare runs once per connection, on the connection the publishes use, so
// what they need exists on the node they reach.
func ExampleWriter_Declare() {
	broker := memory.New()
	defer broker.Close()
	writer := batch.New(broker)
	defer writer.Close()

	ctx := context.Background()
	declare := func(ctx context.Context, connection messaging.Connection) error {
		fmt.Println("declaring invoices")
		declarer, ok := messaging.As[messaging.Declarer](connection)
		if !ok {
			return errors.New("this transport cannot declare")
		}
		return declarer.DeclareQueue(ctx, messaging.Queue{Name: "invoices", Durable: true})
	}
	for range 2 {
		if err := writer.Declare(ctx, "invoices-queue", declare); err != nil {
			fmt.Println(err)
			return
		}
		_, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: "invoices", Payload: []byte("o-7"), Mandatory: true})
		fmt.Println("published:", err == nil)
	}
	// Output:
	// declaring invoices
	// published: true
	// published: true
}
