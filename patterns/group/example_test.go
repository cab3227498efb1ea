package group_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/group"
	"github.com/warrenmq/messaging/streaming"
)

// Four consumers share the orders queue, each with its own connection and
// prefetch; a group that cannot start returns the error and leaves nothing
// running.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	broker := memory.New()
	defer broker.Close()
	quiet := group.Options.Logger(slog.New(slog.DiscardHandler))

	var handled atomic.Int64
	all := make(chan struct{})
	handle := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		if handled.Add(int64(len(messages))) == 8 {
			close(all)
		}
	})
	g, err := group.New(ctx, broker, "orders", 4, handle, quiet)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	for range 8 {
		if err := broker.Publish(ctx, messaging.Dispatch{RoutingKey: "orders", Payload: []byte("{}")}); err != nil {
			panic(err)
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		panic("not every message was handled")
	}
	fmt.Println(g.Members(), "members handled", handled.Load(), "messages")

	_, err = group.New(ctx, broker, "no-such-queue", 4, handle, quiet,
		group.Options.Subscription(streaming.SubscriptionOptions.EstablishTopology(false)))
	fmt.Println(errors.Is(err, messaging.ErrNotFound))
	// Output:
	// 4 members handled 8 messages
	// true
}
