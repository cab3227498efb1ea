package replay_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/replay"
)

// Three messages wait in orders.dlq; the one set aside for a timeout goes back
// to orders, stamped and at attempt 1, and the others stay.
func ExampleRun() {
	broker := memory.New()
	defer broker.Close()
	for _, queue := range []string{"orders", "orders.dlq"} {
		_ = broker.DeclareQueue(queue, memory.QueueOptions{Durable: true})
	}
	ctx := context.Background()
	for i, reason := range []string{"exhausted 5 attempts: timeout calling payments", "card declined", "card declined"} {
		_ = broker.Publish(ctx, messaging.Dispatch{RoutingKey: "orders.dlq", MessageID: fmt.Sprintf("m%d", i), Attempt: 5, Error: reason, Mandatory: true})
	}

	result, err := replay.Run(ctx, broker, replay.From{
		Queue:  "orders.dlq",
		Filter: func(d messaging.Delivery) bool { return strings.Contains(d.Error, "timeout") },
	})
	fmt.Println(result, err)
	fmt.Println("orders:", broker.MessageCount("orders"), "orders.dlq:", broker.MessageCount("orders.dlq"))
	// Output:
	// moved 1, skipped 2 (drained) <nil>
	// orders: 1 orders.dlq: 2
}
