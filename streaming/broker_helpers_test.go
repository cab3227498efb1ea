package streaming

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// brokerTool is a raw amqp091 client for seeding and inspecting queues, so the
// tests do not trust the code under test to check itself.
type brokerTool struct {
	t    testing.TB
	conn *amqp.Connection
	ch   *amqp.Channel
}

func newBrokerTool(t testing.TB, url string) *brokerTool {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial %s: %v; `make services` starts RabbitMQ", url, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		t.Fatalf("open channel: %v", err)
	}
	tool := &brokerTool{t: t, conn: conn, ch: ch}
	t.Cleanup(func() { _ = tool.conn.Close() })
	return tool
}

// reopen replaces a connection that a disruption closed.
func (b *brokerTool) reopen(url string) {
	b.t.Helper()
	_ = b.conn.Close()
	fresh := newBrokerTool(b.t, url)
	b.conn, b.ch = fresh.conn, fresh.ch
}

// declare declares queue the way the transport does (durable, classic) and
// deletes it and its settlement queues when the test ends.
func (b *brokerTool) declare(url, queue string) {
	b.t.Helper()
	if _, err := b.ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		b.t.Fatalf("declare %s: %v", queue, err)
	}
	b.t.Cleanup(func() {
		tool := newBrokerTool(b.t, url)
		for _, name := range []string{queue, queue + ".dlq", queue + ".parked"} {
			_, _ = tool.ch.QueueDelete(name, false, false, false)
		}
	})
}

type order struct {
	N int `json:"n"`
}

// publishOrders publishes count messages with ids prefix-00000.. (confirmed).
func (b *brokerTool) publishOrders(queue, prefix string, count int) []string {
	b.t.Helper()
	if err := b.ch.Confirm(false); err != nil {
		b.t.Fatalf("confirm mode: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids := make([]string, count)
	confirms := make([]*amqp.DeferredConfirmation, 0, count)
	for i := range count {
		ids[i] = fmt.Sprintf("%s-%05d", prefix, i)
		body, _ := json.Marshal(order{N: i})
		confirm, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
			MessageId:    ids[i],
			ContentType:  "application/json",
			DeliveryMode: amqp.Persistent,
			Headers:      amqp.Table{"x-acemq-type": "order", "x-acemq-id": ids[i]},
			Body:         body,
		})
		if err != nil {
			b.t.Fatalf("publish %s: %v", ids[i], err)
		}
		confirms = append(confirms, confirm)
	}
	for _, confirm := range confirms {
		if ok, err := confirm.WaitContext(ctx); err != nil || !ok {
			b.t.Fatalf("publish not confirmed: %v", err)
		}
	}
	return ids
}

// depth returns the ready messages in queue.
func (b *brokerTool) depth(queue string) int {
	b.t.Helper()
	q, err := b.ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		b.t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

// tally counts handled message ids.
type tally struct {
	mu    sync.Mutex
	seen  map[string]int
	total int
	full  chan struct{}
	want  int
	once  sync.Once
}

func newTally(want int) *tally {
	return &tally{seen: map[string]int{}, full: make(chan struct{}), want: want}
}

func (c *tally) add(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[id]++
	c.total++
	if len(c.seen) >= c.want {
		c.once.Do(func() { close(c.full) })
	}
}

func (c *tally) distinct() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

func (c *tally) missing(ids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if c.seen[id] == 0 {
			missing = append(missing, id)
		}
	}
	return missing
}

func (c *tally) wait(t testing.TB, within time.Duration) {
	t.Helper()
	select {
	case <-c.full:
	case <-time.After(within):
		t.Fatalf("handled %d distinct of %d messages within %s", c.distinct(), c.want, within)
	}
}
