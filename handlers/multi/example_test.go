package multi_test

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/multi"
)

type OrderShipped struct{ OrderID string }

// One subscription feeds two handlers the same batch, in order: a
// projection and a notifier. A panic in the first stops the batch, so an
// outer retry runs both again; each must be idempotent.
func ExampleNew() {
	project := messaging.HandleEach(func(_ context.Context, order OrderShipped) error {
		fmt.Println("project", order.OrderID)
		return nil
	})
	notify := messaging.HandleEach(func(_ context.Context, order OrderShipped) error {
		fmt.Println("notify", order.OrderID)
		return nil
	})

	handler := multi.New(project, notify)
	handler.Handle(context.Background(), OrderShipped{OrderID: "o-1"}, OrderShipped{OrderID: "o-2"})
	// Output:
	// project o-1
	// project o-2
	// notify o-1
	// notify o-2
}
