package middleware_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/middleware"
	"github.com/warrenmq/messaging/streaming"
)

var took = regexp.MustCompile(` took=\S+`)

// The documented chain under the streaming runtime, first named outermost:
// logging records what recovery and the timeout decided; the message that
// outlived the timeout is handled again, on its second attempt, after the
// ones queued behind it.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	broker := memory.New()
	defer broker.Close()

	var mu sync.Mutex
	var lines []string
	logged := make(chan struct{}, 4)
	printf := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		mu.Lock()
		lines = append(lines, took.ReplaceAllString(line, "")) // without the time
		mu.Unlock()
		logged <- struct{}{}
	}
	handle := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		switch d := messaging.DeliveriesFrom(ctx)[0]; d.MessageID {
		case "slow":
			if d.Attempt > 1 {
				return
			}
			<-ctx.Done() // a cooperative handler stops when the timeout cancels it
		case "broken":
			panic("nil map")
		}
	})
	worker := messaging.Chain(
		middleware.Logging(printf),
		middleware.Recovery(),
		middleware.Timeout(50*time.Millisecond),
	)(handle)
	consumer := streaming.New(broker, streaming.Options.Logger(slog.New(slog.DiscardHandler)),
		streaming.Options.Subscriptions(streaming.NewSubscription("orders",
			streaming.SubscriptionOptions.AddWorkers(worker))))
	go consumer.Listen()
	defer consumer.Close()
	if err := consumer.Started(ctx); err != nil {
		panic(err)
	}
	for _, id := range []string{"fine", "slow", "broken"} {
		if err := broker.Publish(ctx, messaging.Dispatch{RoutingKey: "orders", MessageID: id, MessageType: "order.placed", Payload: []byte("{}")}); err != nil {
			panic(err)
		}
	}
	for range 4 {
		select {
		case <-logged:
		case <-ctx.Done():
			panic("not every message was logged")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, line := range lines {
		fmt.Println(line)
	}
	// Output:
	// acemq fine type=order.placed attempt=1 accepted
	// acemq slow type=order.placed attempt=1 retried
	// acemq broken type=order.placed attempt=1 rejected: the handler rejected it: acemq: the handler panicked on message broken: nil map
	// acemq slow type=order.placed attempt=2 accepted
}
