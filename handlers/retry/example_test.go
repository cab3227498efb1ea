package retry_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/retrypolicy"
)

type OrderPlaced struct{ OrderID string }

type attempts struct{ retry.NopMonitor }

func (attempts) HandleAttempted(attempt int, result any) {
	fmt.Printf("attempt %d: %v\n", attempt, result)
}

// A handler whose first two tries fail is run again on the policy's waits;
// the third succeeds. The budget is one retrypolicy value, the one the
// subscription's settlement is given too.
func ExampleNew() {
	tries := 0
	ship := messaging.HandleEach(func(_ context.Context, order OrderPlaced) error {
		tries++
		if tries < 3 {
			return fmt.Errorf("ship %s: warehouse busy", order.OrderID)
		}
		fmt.Println("shipped", order.OrderID)
		return nil
	})

	handler := retry.New(ship,
		retry.Options.Policy(retrypolicy.Fixed(5, time.Millisecond)),
		retry.Options.Monitor(attempts{}),
		retry.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	handler.Handle(context.Background(), OrderPlaced{OrderID: "o-1"})
	// Output:
	// attempt 1: ship o-1: warehouse busy
	// attempt 2: ship o-1: warehouse busy
	// shipped o-1
	// attempt 3: <nil>
}

// An error marked Fatal is not retried: retry gives up at once and
// re-panics, for the settlement around it to dead-letter the message.
func ExampleNew_fatal() {
	handler := retry.New(
		messaging.HandleEach(func(_ context.Context, order OrderPlaced) error {
			return messaging.Fatalf("order %s names no customer", order.OrderID)
		}),
		retry.Options.Policy(retrypolicy.Fixed(5, time.Millisecond)),
		retry.Options.Monitor(attempts{}),
		retry.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	defer func() {
		err, _ := recover().(error)
		fmt.Println("gave up, fatal:", messaging.IsFatal(err))
		fmt.Println(err)
	}()
	handler.Handle(context.Background(), OrderPlaced{OrderID: "o-2"})
	// Output:
	// attempt 1: order o-2 names no customer
	// gave up, fatal: true
	// order o-2 names no customer
}
