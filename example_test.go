package messaging_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
)

type OrderPlaced struct{ OrderID string }

// A typed handler receives each decoded message as its own type, with its
// envelope in the context. The streaming runtime calls Handle with the
// decoded batch and its deliveries; a test calls it the same way.
func ExampleHandleEach() {
	handler := messaging.HandleEach(func(ctx context.Context, order OrderPlaced) error {
		delivery, _ := messaging.DeliveryFrom(ctx)
		fmt.Printf("ship %s (message %s, attempt %d)\n", order.OrderID, delivery.MessageID, delivery.Attempt)
		return nil
	})

	ctx := messaging.WithDeliveries(context.Background(), []messaging.Delivery{
		{MessageID: "m-1", Attempt: 1},
		{MessageID: "m-2", Attempt: 2},
	})
	handler.Handle(ctx, OrderPlaced{OrderID: "o-1"}, OrderPlaced{OrderID: "o-2"})
	// Output:
	// ship o-1 (message m-1, attempt 1)
	// ship o-2 (message m-2, attempt 2)
}

// Middleware composes like net/http's: the first is outermost.
func ExampleChain() {
	trace := func(name string) messaging.Middleware {
		return func(next messaging.Handler) messaging.Handler {
			return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
				fmt.Println("enter", name)
				next.Handle(ctx, messages...)
				fmt.Println("leave", name)
			})
		}
	}
	handler := messaging.Chain(trace("outer"), trace("inner"))(messaging.HandleEach(func(_ context.Context, order OrderPlaced) error {
		fmt.Println("handle", order.OrderID)
		return nil
	}))
	handler.Handle(context.Background(), OrderPlaced{OrderID: "o-1"})
	// Output:
	// enter outer
	// enter inner
	// handle o-1
	// leave inner
	// leave outer
}

// The classifiers tell a dependency's failure from a message's own, so
// retry and settlement never spend a message's budget on an outage.
func ExampleIsOutage() {
	database := messaging.Outage(errors.New("dial tcp 127.0.0.1:3306: connection refused"))
	poison := messaging.Fatalf("order %s has no lines", "o-1")
	for _, err := range []error{database, poison, fmt.Errorf("ship: %w", database)} {
		fmt.Println(messaging.IsOutage(err), messaging.IsFatal(err))
	}
	// Output:
	// true false
	// false true
	// true false
}
