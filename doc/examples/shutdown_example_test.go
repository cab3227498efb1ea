package examples_test

import (
	"context"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/streaming"
)

// Example_shutdown closes a consumer while a batch is in flight: with
// ShutdownStrategyCurrentBatch the batch finishes and is acknowledged before
// Close returns. In a service, close the consumer first and the outbox
// dispatcher after it, so what the last batches committed is still handed off.
func Example_shutdown() {
	ctx := context.Background()
	broker := memory.New()
	defer broker.Close()
	_ = broker.DeclareQueue("emails", memory.QueueOptions{Durable: true})
	_ = broker.Publish(ctx, messaging.Dispatch{RoutingKey: "emails", Payload: []byte("welcome")})

	started := make(chan struct{})
	release := make(chan struct{})
	consumer := streaming.New(broker,
		streaming.Options.Subscriptions(streaming.NewSubscription("emails",
			streaming.SubscriptionOptions.AddWorkers(messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
				close(started)
				select {
				case <-release: // the work finishes
				case <-ctx.Done(): // the shutdown timeout passed: give up
				}
			})),
			streaming.SubscriptionOptions.ShutdownStrategy(streaming.ShutdownStrategyCurrentBatch, 5*time.Second),
		)),
		streaming.Options.Logger(quiet),
	)
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()

	if _, err := await(started, "the batch"); err != nil {
		fmt.Println(err)
		return
	}
	closed := make(chan error, 1)
	go func() { closed <- consumer.Close() }()
	close(release) // the in-flight batch completes after Close was called
	if err, waitErr := await(closed, "Close"); waitErr != nil || err != nil {
		fmt.Println(err, waitErr)
		return
	}
	<-listening // Listen has returned too
	fmt.Println("closed; left on emails:", broker.MessageCount("emails"))

	// Output:
	// closed; left on emails: 0
}
