package streaming_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/streaming"
)

// TestABatchEndedByAnOutageStillAcknowledgesWhatItSetAside: the handler
// rejects the first message of its batch (a copy goes to the dead-letter
// queue) and then fails the batch with an outage. The rejected message must
// be acknowledged with its copy confirmed, so it is set aside once; the
// others come back and are handled.
func TestABatchEndedByAnOutageStillAcknowledgesWhatItSetAside(t *testing.T) {
	const queue = "partly"
	broker := memoryQueue(t, queue, "m", 5)
	var mu sync.Mutex
	seen := map[string]int{}
	var first []string // the ids of the batch that fails, the rejected one first
	handled := make(chan struct{}, 1)
	handler := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		deliveries := messaging.DeliveriesFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		for _, d := range deliveries {
			seen[d.MessageID]++
		}
		if first == nil {
			for _, d := range deliveries {
				first = append(first, d.MessageID)
			}
			if err := messaging.Reject(ctx, deliveries[0], errors.New("refused")); err != nil {
				panic(err)
			}
			panic(messaging.Outage(errors.New("the database went away")))
		}
		for _, id := range first[1:] {
			if seen[id] < 2 {
				return
			}
		}
		if len(seen) == 5 {
			select {
			case handled <- struct{}{}:
			default:
			}
		}
	})
	consumer := streaming.New(broker, streaming.Options.Subscriptions(
		streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.AddWorkers(handler),
			streaming.SubscriptionOptions.BatchCapacity(5),
			streaming.SubscriptionOptions.BufferCapacity(5),
			streaming.SubscriptionOptions.ReconnectDelay(10*time.Millisecond),
		)))
	listen(t, consumer)

	select {
	case <-handled:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the others of the failed batch %v were not redelivered and handled within 10s: seen %v", first, seen)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[first[0]] != 1 {
		t.Errorf("the rejected message was handled %d times, want once: its delivery must be acknowledged once its copy is set aside", seen[first[0]])
	}
	if n := broker.MessageCount(queue + ".dlq"); n != 1 {
		t.Errorf("%d copies in %s.dlq, want 1", n, queue)
	}
}
