package memory

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/internal/testenv"
)

// TestPinnedTopicCasesAgreeWithRabbitMQ binds one queue per pinned pattern to
// a topic exchange on the real broker, publishes every pinned key, and checks
// that each queue received exactly the keys topicMatches says it should: the
// whole cross product of patterns and keys, as RabbitMQ routes it.
func TestPinnedTopicCasesAgreeWithRabbitMQ(t *testing.T) {
	address := testenv.Broker(t)
	conn, err := amqp.DialConfig(address, amqp.Config{Dial: amqp.DefaultDial(10 * time.Second)})
	if err != nil {
		t.Fatalf("cannot reach RabbitMQ at %s: %v; is it running? `make services` starts it", address, err)
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open channel: %v", err)
	}
	exchangeName := testenv.Name(t, "topic")
	if err := ch.ExchangeDeclare(exchangeName, "topic", false, true, false, false, nil); err != nil {
		t.Fatalf("declare exchange: %v", err)
	}
	defer func() { _ = ch.ExchangeDelete(exchangeName, false, false) }()

	queues := make([]string, len(topicCases))
	for i, c := range topicCases {
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			t.Fatalf("declare queue: %v", err)
		}
		queues[i] = q.Name
		if err := ch.QueueBind(q.Name, c.pattern, exchangeName, false, nil); err != nil {
			t.Fatalf("bind %q: %v", c.pattern, err)
		}
	}

	if err := ch.Confirm(false); err != nil {
		t.Fatalf("confirm mode: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := map[string]bool{}
	for _, c := range topicCases {
		if keys[c.key] {
			continue
		}
		keys[c.key] = true
		confirm, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchangeName, c.key, false, false, amqp.Publishing{Body: []byte(c.key)})
		if err != nil {
			t.Fatalf("publish %q: %v", c.key, err)
		}
		if ok, err := confirm.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("confirm %q: %t %v", c.key, ok, err)
		}
	}

	for i, c := range topicCases {
		got := map[string]bool{}
		for {
			msg, ok, err := ch.Get(queues[i], true)
			if err != nil {
				t.Fatalf("get from the queue bound with %q: %v", c.pattern, err)
			}
			if !ok {
				break
			}
			got[string(msg.Body)] = true
		}
		for key := range keys {
			if want := topicMatches(c.pattern, key); got[key] != want {
				t.Errorf("pattern %q key %q: RabbitMQ routed %t, topicMatches says %t", c.pattern, key, got[key], want)
			}
		}
	}
}
