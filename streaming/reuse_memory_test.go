package streaming_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/streaming"
)

// TestReusedDeliveriesKeepEveryMessageThroughOutagesAndRejections runs four
// workers over batches of up to seven while some batches end in an outage
// (every delivery of the session comes back) and some messages are set
// aside. The runtime reuses each Delivery once it is acknowledged: one reused
// while still held would acknowledge the wrong delivery tag, and the message
// it stood for would never be handled, or a handler would see a payload that
// is not its message's. Every message must reach a handler intact.
func TestReusedDeliveriesKeepEveryMessageThroughOutagesAndRejections(t *testing.T) {
	const queue, total = "reuse", 3000
	broker := memoryQueue(t, queue, "", total)
	var mu sync.Mutex
	seen := map[string]int{}
	var mismatched []string
	done := make(chan struct{})
	handler := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		var outage bool
		for _, d := range messaging.DeliveriesFrom(ctx) {
			mu.Lock()
			if string(d.Payload) != d.MessageID {
				mismatched = append(mismatched, fmt.Sprintf("message %s carried payload %q", d.MessageID, d.Payload))
			}
			seen[d.MessageID]++
			first, count := seen[d.MessageID] == 1, len(seen)
			mu.Unlock()
			var n int
			_, _ = fmt.Sscan(d.MessageID, &n)
			switch {
			case first && n%97 == 0:
				outage = true
			case first && n%89 == 0:
				if err := messaging.Reject(ctx, d, errors.New("refused")); err != nil {
					panic(err)
				}
			}
			if count == total {
				select {
				case <-done:
				default:
					close(done)
				}
			}
		}
		if outage {
			panic(messaging.Outage(errors.New("the database went away")))
		}
	})
	consumer := streaming.New(broker, streaming.Options.Subscriptions(streaming.NewSubscription(queue,
		streaming.SubscriptionOptions.AddWorkers(handler, handler, handler, handler),
		streaming.SubscriptionOptions.BatchCapacity(7),
		streaming.SubscriptionOptions.BufferCapacity(64),
		streaming.SubscriptionOptions.ReconnectDelay(time.Millisecond))),
		streaming.Options.Logger(slog.New(slog.DiscardHandler)))
	listen(t, consumer)

	select {
	case <-done:
	case <-time.After(60 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("after 60 s, %d of %d messages had reached a handler", len(seen), total)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(mismatched) > 0 {
		t.Fatalf("%d deliveries reached a handler with another message's payload, first: %s", len(mismatched), mismatched[0])
	}
}
