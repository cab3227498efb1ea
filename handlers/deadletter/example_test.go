package deadletter_test

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

type OrderPlaced struct {
	OrderID string `json:"order_id"`
}

// settled hears each settlement decision.
type settled chan string

func (s settled) Settled(queue, action, reason string) {
	if reason != "" {
		action += ": " + reason
	}
	s <- queue + " " + action
}

// The settlement is stated on the subscription, with the budget retry is
// given: a message whose handling fails for good is set aside in
// {queue}.dlq with the reason, its neighbours are acknowledged, and one that
// does not decode is parked in {queue}.parked before any handler sees it.
// The in-memory broker stands in for rabbitmq.New(...) here.
func Example() {
	broker := memory.New()
	defer broker.Close()
	encoded := serialization.New(broker,
		serialization.Options.ReadTypes(map[string]reflect.Type{"order-placed": reflect.TypeOf(OrderPlaced{})}),
		serialization.Options.Logger(slog.New(slog.DiscardHandler)),
	)

	quiet := slog.New(slog.DiscardHandler)
	budget := retrypolicy.Fixed(3, time.Millisecond)
	decisions := make(settled, 8)
	ship := retry.New(messaging.HandleEach(func(_ context.Context, order OrderPlaced) error {
		if order.OrderID == "" {
			return messaging.Fatalf("an order without an id cannot be shipped")
		}
		return nil
	}), retry.Options.Policy(budget), retry.Options.Logger(quiet))

	consumer := streaming.New(encoded,
		streaming.Options.Subscriptions(streaming.NewSubscription("orders.ship",
			streaming.SubscriptionOptions.Topics("order-placed"),
			streaming.SubscriptionOptions.AddWorkers(ship),
			streaming.SubscriptionOptions.Settlement(
				deadletter.Options.Policy(budget),
				deadletter.Options.Monitor(decisions),
				deadletter.Options.Logger(quiet),
			),
		)),
		streaming.Options.Logger(quiet),
	)
	go consumer.Listen()
	defer consumer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		fmt.Println(err)
		return
	}

	for i, body := range []string{`{"order_id":"o-1"}`, `{"order_id":""}`, `not json`} {
		_ = broker.Publish(ctx, messaging.Dispatch{Topic: "order-placed", MessageID: fmt.Sprintf("m-%d", i+1),
			MessageType: "order-placed", ContentType: "application/json", Payload: []byte(body)})
	}
	var seen []string
	for range 3 {
		select {
		case decision := <-decisions:
			seen = append(seen, decision)
		case <-ctx.Done():
			fmt.Println("timed out waiting for the settlement")
			return
		}
	}
	slices.Sort(seen) // batches form as deliveries arrive: the order of decisions may vary
	for _, decision := range seen {
		fmt.Println(decision)
	}
	_ = consumer.Close()
	for _, queue := range []string{"orders.ship.dlq", "orders.ship.parked"} {
		copy, _ := broker.Pull(queue)
		fmt.Printf("%s: %s (%s)\n", queue, copy.Payload, copy.Error)
	}
	// Output:
	// orders.ship accepted
	// orders.ship dead_lettered: the handler reported an unprocessable message: message "m-2" (order-placed): an order without an id cannot be shipped
	// orders.ship parked: could not be decoded: this message is not JSON that reads as deadletter_test.OrderPlaced: invalid character 'o' in literal null (expecting 'u')
	// orders.ship.dlq: {"order_id":""} (the handler reported an unprocessable message: message "m-2" (order-placed): an order without an id cannot be shipped)
	// orders.ship.parked: not json (could not be decoded: this message is not JSON that reads as deadletter_test.OrderPlaced: invalid character 'o' in literal null (expecting 'u'))
}
