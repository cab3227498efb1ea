package streaming_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

type OrderPlaced struct {
	OrderID string `json:"order_id"`
}

// A consumer with one subscription: its queue bound to the order-placed
// topic, one typed worker, and the runtime's settlement around it. Started
// reports when the stream is open (and its topology declared); Close drains
// what was read. The in-memory broker stands in for rabbitmq.New(...) here.
func ExampleNew() {
	broker := memory.New()
	defer broker.Close()
	encoded := serialization.New(broker,
		serialization.Options.ReadTypes(map[string]reflect.Type{"order-placed": reflect.TypeOf(OrderPlaced{})}),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(OrderPlaced{}): "order-placed"}),
	)

	shipped := make(chan string, 2)
	consumer := streaming.New(encoded,
		streaming.Options.Subscriptions(streaming.NewSubscription("orders.ship",
			streaming.SubscriptionOptions.Topics("order-placed"),
			streaming.SubscriptionOptions.AddWorkers(messaging.HandleEach(func(ctx context.Context, order OrderPlaced) error {
				delivery, _ := messaging.DeliveryFrom(ctx)
				shipped <- fmt.Sprintf("shipped %s (%s)", order.OrderID, delivery.MessageType)
				return nil
			})),
			streaming.SubscriptionOptions.BatchCapacity(16),
		)),
		streaming.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	go consumer.Listen()
	defer consumer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		fmt.Println(err) // a missing queue or refused access, at once
		return
	}

	connection, _ := encoded.Connect(ctx)
	defer connection.Close()
	writer, _ := connection.Writer(ctx)
	if _, err := writer.Write(ctx,
		messaging.Dispatch{Message: OrderPlaced{OrderID: "o-1"}, Mandatory: true},
		messaging.Dispatch{Message: OrderPlaced{OrderID: "o-2"}, Mandatory: true},
	); err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		select {
		case line := <-shipped:
			fmt.Println(line)
		case <-ctx.Done():
			fmt.Println("timed out waiting for the worker")
			return
		}
	}
	fmt.Println("close:", consumer.Close())
	fmt.Println("left on orders.ship:", broker.MessageCount("orders.ship"))
	// Output:
	// shipped o-1 (order-placed)
	// shipped o-2 (order-placed)
	// close: <nil>
	// left on orders.ship: 0
}
