package examples_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
)

// Example_contracts walks the root vocabulary on the in-memory transport:
// a Connector opens a Connection, which opens a Writer and a Reader; the
// Reader opens a Stream; a Write reports per message whether it landed, and a
// Delivery is acknowledged after it was handled.
func Example_contracts() {
	ctx := context.Background()
	var connector messaging.Connector = memory.New()
	defer connector.Close()

	connection, err := connector.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer connection.Close()

	// Open the stream first: with EstablishTopology it declares the queue,
	// the "greetings" exchange and the binding between them.
	reader, err := connection.Reader(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reader.Close()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{
		StreamName:        "greetings.log",
		Topics:            []string{"greetings"},
		EstablishTopology: true,
		BufferCapacity:    8,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stream.Close()

	writer, err := connection.Writer(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer writer.Close()

	// One routable message and one mandatory message to a key nothing is
	// bound to on amq.direct: the second comes back as ErrUnroutable.
	written, err := writer.Write(ctx,
		messaging.Dispatch{Topic: "greetings", MessageType: "greeting", ContentType: "text/plain", Payload: []byte("hello"), Mandatory: true},
		messaging.Dispatch{Topic: "amq.direct", RoutingKey: "nobody-listens", MessageID: "lost-1", Payload: []byte("?"), Mandatory: true},
	)
	fmt.Println("landed:", written)
	fmt.Println("unroutable:", errors.Is(err, messaging.ErrUnroutable))
	var publishErr *messaging.PublishError
	if errors.As(err, &publishErr) {
		for _, failed := range publishErr.Failed() {
			fmt.Println("failed message:", failed.MessageID)
		}
	}

	var delivery messaging.Delivery
	if err := stream.Read(ctx, &delivery); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("read %q of type %s from %s (attempt %d)\n", delivery.Payload, delivery.MessageType, delivery.SourceQueue, delivery.Attempt)
	fmt.Println("correlation defaults to the id:", delivery.CorrelationID == delivery.MessageID)
	if err := stream.Acknowledge(ctx, delivery); err != nil {
		fmt.Println(err)
		return
	}

	// Fatal marks a failure that retrying cannot fix.
	fmt.Println("fatal:", messaging.IsFatal(fmt.Errorf("wrapped: %w", messaging.Fatalf("order %s does not exist", "o-9"))))

	// Output:
	// landed: 1
	// unroutable: true
	// failed message: lost-1
	// read "hello" of type greeting from greetings.log (attempt 1)
	// correlation defaults to the id: true
	// fatal: true
}
