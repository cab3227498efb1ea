package examples_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/streaming"
)

// Example_testing tests a handler against the in-memory broker, without
// RabbitMQ: arrange the topology and the input with the broker's helpers, run
// the real consumer runtime, and inspect the queues afterwards. Here a handler
// refuses one message as fatal, and the test checks that it was set aside in
// {queue}.dlq with its reason while its neighbour was handled.
func Example_testing() {
	ctx := context.Background()
	broker := memory.New()
	defer broker.Close()

	// The same declarations the subscription makes when its stream opens.
	_ = broker.DeclareExchange("payments", memory.KindFanout, true)
	_ = broker.DeclareQueue("payments.ledger", memory.QueueOptions{Durable: true})
	_ = broker.Bind("payments.ledger", "payments", "")

	handled := make(chan string, 2)
	ledger := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, message := range messages {
			payment := string(message.(messaging.Delivery).Payload)
			if payment == "negative" {
				panic(messaging.Fatalf("a payment cannot be negative"))
			}
			handled <- payment
		}
	})
	consumer := streaming.New(broker,
		streaming.Options.Subscriptions(streaming.NewSubscription("payments.ledger",
			streaming.SubscriptionOptions.Topics("payments"),
			streaming.SubscriptionOptions.AddWorkers(
				deadletter.New(broker,
					retry.New(ledger, retry.Options.Logger(quiet)),
					deadletter.Options.FullDelivery(true),
					deadletter.Options.Logger(quiet))),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
		)),
		streaming.Options.Logger(quiet),
	)
	go consumer.Listen()

	for _, payment := range []string{"negative", "ten-dollars"} {
		if err := broker.Publish(ctx, messaging.Dispatch{Topic: "payments", Payload: []byte(payment), Mandatory: true}); err != nil {
			fmt.Println(err)
			return
		}
	}
	payment, err := await(handled, "the healthy payment")
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = consumer.Close()

	fmt.Println("handled:", payment)
	fmt.Println("left on payments.ledger:", broker.MessageCount("payments.ledger"))
	if dead, ok := broker.Pull("payments.ledger.dlq"); ok {
		fmt.Printf("dead-lettered %q: %s\n", dead.Payload, dead.Error)
	}

	// The broker is no kinder than RabbitMQ: what was never declared is NOT_FOUND.
	err = broker.Publish(ctx, messaging.Dispatch{Topic: "refunds", Payload: []byte("x")})
	var refusal *messaging.BrokerError
	if errors.As(err, &refusal) {
		fmt.Println("refused:", refusal.Code, errors.Is(err, messaging.ErrNotFound))
	}

	// Output:
	// handled: ten-dollars
	// left on payments.ledger: 0
	// dead-lettered "negative": the handler reported an unprocessable message: a payment cannot be negative
	// refused: 404 true
}
