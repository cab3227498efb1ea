package examples_test

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/memory"
)

// Example_performance shows the shape `make bench` measures on the publish
// side: many dispatches per batch.Writer call, so one confirm round trip
// covers the whole batch. The in-memory broker stands in for RabbitMQ; the
// figures in doc/performance.md come from the real broker.
func Example_performance() {
	ctx := context.Background()
	broker := memory.New()
	defer broker.Close()
	_ = broker.DeclareQueue("bench", memory.QueueOptions{Durable: true})

	writer := batch.New(broker)
	defer writer.Close()
	payload := make([]byte, 1024)
	dispatches := make([]messaging.Dispatch, 100)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: "bench", Mandatory: true, ContentType: "application/octet-stream", Payload: payload}
	}
	total := 0
	for range 10 {
		n, err := writer.Write(ctx, dispatches...)
		total += n
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("published:", total)
	fmt.Println("queued:", broker.MessageCount("bench"))

	// Output:
	// published: 1000
	// queued: 1000
}
