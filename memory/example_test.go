package memory_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
)

// A handler test wires the in-memory broker where the RabbitMQ connector
// would go: the stream declares its topology, a writer publishes to the topic,
// and what is not acknowledged comes back.
func Example() {
	broker := memory.New()
	defer func() { _ = broker.Close() }()
	ctx := context.Background()

	conn, _ := broker.Connect(ctx)
	reader, _ := conn.Reader(ctx)
	stream, _ := reader.Stream(ctx, messaging.StreamConfig{
		StreamName:        "orders",
		Topics:            []string{"order-placed"},
		EstablishTopology: true,
		BufferCapacity:    8,
	})
	writer, _ := conn.Writer(ctx)
	_, _ = writer.Write(ctx, messaging.Dispatch{Topic: "order-placed", Payload: []byte(`{"id":1}`), Mandatory: true})

	var delivery messaging.Delivery
	_ = stream.Read(ctx, &delivery)
	fmt.Println(delivery.SourceQueue, delivery.Topic, string(delivery.Payload), delivery.Redelivered)

	_ = stream.Close() // unacknowledged: back to the front of the queue
	again, _ := broker.Pull("orders")
	fmt.Println(string(again.Payload), again.Redelivered)

	_, err := writer.Write(ctx, messaging.Dispatch{Topic: "order-placed", RoutingKey: "k", Mandatory: true})
	fmt.Println(err == nil)
	_ = broker.DeleteQueue("orders")
	_, err = writer.Write(ctx, messaging.Dispatch{Topic: "order-placed", RoutingKey: "k", Mandatory: true})
	fmt.Println(errors.Is(err, messaging.ErrUnroutable))
	// Output:
	// orders order-placed {"id":1} false
	// {"id":1} true
	// true
	// true
}
