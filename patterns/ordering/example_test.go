package ordering_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/ordering"
	"github.com/warrenmq/messaging/streaming"
)

// Four workers share one ordering handler: the events of each order are
// handled in the order they were published, while different orders run at
// once. A producer that wants one consumer per order routes by partition.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	broker := memory.New()
	defer broker.Close()

	var mu sync.Mutex
	handled := map[string][]string{}
	all := make(chan struct{})
	handle := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		for _, d := range messaging.DeliveriesFrom(ctx) {
			mu.Lock()
			order := fmt.Sprint(d.Headers["x-order-id"])
			handled[order] = append(handled[order], string(d.Payload))
			if len(handled["A-1"])+len(handled["B-2"])+len(handled["C-3"]) == 9 {
				close(all)
			}
			mu.Unlock()
		}
	})
	ordered := ordering.New(ordering.ByHeader("x-order-id"), handle)
	consumer := streaming.New(broker, streaming.Options.Logger(slog.New(slog.DiscardHandler)),
		streaming.Options.Subscriptions(streaming.NewSubscription("orders",
			streaming.SubscriptionOptions.AddWorkers(ordered, ordered, ordered, ordered))))
	go consumer.Listen()
	defer consumer.Close()
	if err := consumer.Started(ctx); err != nil {
		panic(err)
	}

	for _, event := range []string{"placed", "paid", "shipped"} {
		for _, order := range []string{"A-1", "B-2", "C-3"} {
			dispatch := messaging.Dispatch{RoutingKey: "orders", Headers: map[string]any{"x-order-id": order}, Payload: []byte(event)}
			if err := broker.Publish(ctx, dispatch); err != nil {
				panic(err)
			}
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		panic("not every event was handled")
	}

	mu.Lock()
	defer mu.Unlock()
	for _, order := range []string{"A-1", "B-2", "C-3"} {
		fmt.Println(order, handled[order])
	}
	fmt.Println(ordering.PartitionedRoutingKey("orders", "A-1", 8))
	// Output:
	// A-1 [placed paid shipped]
	// B-2 [placed paid shipped]
	// C-3 [placed paid shipped]
	// orders.6
}
