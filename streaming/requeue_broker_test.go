package streaming

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

// requeueWatch counts the runtime's requeues and the sessions that ended.
type requeueWatch struct {
	NopMonitor
	requeued atomic.Int64
	closed   atomic.Int64
}

func (w *requeueWatch) DeliveriesRequeued(_ string, count int) { w.requeued.Add(int64(count)) }
func (w *requeueWatch) StreamClosed(string)                    { w.closed.Add(1) }

// TestBrokerAFailedSetAsideRedeliversThatMessageNotThePrefetch: 200
// messages in batches of 20 with a prefetch of 100, one of which always fails
// while its dead-letter queue does not exist, so setting it aside fails
// (unroutable). The runtime returns that one message to its queue and goes
// on: each of the 199 others is delivered exactly once, the session never
// ends, and only the poison message comes back. Before, each failed
// set-aside ended the session and every unacknowledged delivery (up to the
// prefetch) was redelivered, handled ones included.
func TestBrokerAFailedSetAsideRedeliversThatMessageNotThePrefetch(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "requeue")
	tool := newBrokerTool(t, url)
	tool.declare(url, queue)
	ids := tool.publishOrders(queue, "r", 200)
	poison := ids[57]

	// seen counts, per message, the deliveries of it the broker made (their
	// delivery tags): the settlement runs a failed batch's messages again
	// alone, which is the same delivery, not a redelivery.
	// done is closed once every healthy message was delivered and the poison
	// one came back at least twice (each return follows a requeue).
	var mu sync.Mutex
	tags := map[string]map[uint64]bool{}
	done := make(chan struct{})
	closeDone := sync.OnceFunc(func() { close(done) })
	handler := messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, message := range messages {
			delivery := message.(messaging.Delivery)
			mu.Lock()
			if tags[delivery.MessageID] == nil {
				tags[delivery.MessageID] = map[uint64]bool{}
			}
			tags[delivery.MessageID][delivery.DeliveryID] = true
			if len(tags) == len(ids) && len(tags[poison]) >= 3 {
				closeDone()
			}
			mu.Unlock()
			if delivery.MessageID == poison {
				panic(messaging.Fatal(errors.New("this order can never be shipped")))
			}
		}
	})
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quietLogger()))
	t.Cleanup(func() { _ = transport.Close() })
	watch := &requeueWatch{}
	consumer := New(transport, Options.Logger(testLogger(t)), Options.Monitor(watch), Options.Subscriptions(NewSubscription(queue,
		SubscriptionOptions.AddWorkers(handler),
		SubscriptionOptions.BufferCapacity(100),
		SubscriptionOptions.BatchCapacity(20),
		SubscriptionOptions.FullDeliveryToHandler(true),
		SubscriptionOptions.DeadLetters(false), // no {queue}.dlq: setting the poison aside fails
		SubscriptionOptions.ReconnectDelay(200*time.Millisecond),
	)))
	listened := make(chan struct{})
	go func() { defer close(listened); consumer.Listen() }()

	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		handled, poisonSeen := len(tags), len(tags[poison])
		mu.Unlock()
		t.Fatalf("within 30 s: %d of %d messages delivered, the poison %d times, %d requeue(s); want all, and the poison back at least twice",
			handled, len(ids), poisonSeen, watch.requeued.Load())
	}
	closedBeforeClose := watch.closed.Load()
	_ = consumer.Close()
	receiveWithin(t, listened, 30*time.Second, "Listen to return after Close")

	mu.Lock()
	defer mu.Unlock()
	twice := 0
	for _, id := range ids {
		if id != poison && len(tags[id]) != 1 {
			twice++
		}
	}
	t.Logf("200 messages, 1 poison: %d healthy delivered more than once, the poison handed %d times, %d requeue(s), %d session(s) ended before Close",
		twice, len(tags[poison]), watch.requeued.Load(), closedBeforeClose)
	if twice > 0 {
		t.Fatalf("%d healthy messages were handled more than once; a failed set-aside must redeliver that message only", twice)
	}
	if watch.requeued.Load() < 2 {
		t.Fatalf("the poison came back %d times but the monitor heard %d requeue(s)", len(tags[poison]), watch.requeued.Load())
	}
	if closedBeforeClose != 0 {
		t.Fatalf("%d session(s) ended before Close; a failed set-aside must not end the session", closedBeforeClose)
	}
	if got := tool.depth(queue); got != 1 {
		t.Fatalf("the queue holds %d messages after Close; want the poison one, returned to it", got)
	}
}
