package rabbitmq_test

import (
	"context"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/retrypolicy"
)

// retryRungDeclarer is the structural interface the deadletter package asserts
// on a messaging.Connection.
type retryRungDeclarer interface {
	DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
}

func TestAMessageInARetryRungReturnsToItsQueueAfterTheDelay(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("retried")
	rung := retrypolicy.RungName(queue, time.Second)
	b.deleteQueueAtEnd(rung) // the binding to acemq.retry goes with queue; the shared exchange stays
	conn := connect(t, b.url)
	declarer, ok := conn.(retryRungDeclarer)
	if !ok {
		t.Fatalf("%T has no DeclareRetryRung", conn)
	}

	if err := declarer.DeclareRetryRung(testContext(t), queue, rung, time.Second); err != nil {
		t.Fatalf("DeclareRetryRung: %v", err)
	}
	// Declaring again with exactly these arguments succeeds only if the broker
	// holds exactly these.
	if err := b.do(func(ch *amqp.Channel) error {
		_, err := ch.QueueDeclarePassive(rung, true, false, false, false, nil)
		if err != nil {
			return err
		}
		_, err = ch.QueueDeclare(rung, true, false, false, false, amqp.Table{
			"x-message-ttl":             int64(1000),
			"x-dead-letter-exchange":    "acemq.retry",
			"x-dead-letter-routing-key": queue,
		})
		return err
	}); err != nil {
		t.Fatalf("the rung %s is not declared with the expected arguments: %v", rung, err)
	}

	if _, err := openWriter(t, conn).Write(testContext(t), messaging.Dispatch{RoutingKey: rung, MessageID: "retried-1", Mandatory: true, Payload: []byte("again")}); err != nil {
		t.Fatalf("Write to the rung: %v", err)
	}
	if got := b.count(queue); got != 0 {
		t.Fatalf("right after the publish the source queue holds %d; want 0 until the delay passes", got)
	}
	testenv.Eventually(t, settle, "the message returning to the source queue", func() bool { return b.count(queue) == 1 })

	d, ok := b.get(queue)
	if !ok || d.MessageId != "retried-1" || string(d.Body) != "again" {
		t.Fatalf("source queue delivered %q %q (ok %v); want retried-1 carrying \"again\"", d.MessageId, d.Body, ok)
	}
	if got := b.count(rung); got != 0 {
		t.Fatalf("the rung still holds %d", got)
	}
}

func TestDeclaringARetryRungTwiceIsHarmless(t *testing.T) {
	b := newBroker(t, testenv.Broker(t))
	queue := b.queue("retried")
	rung := retrypolicy.RungName(queue, 2*time.Second)
	b.deleteQueueAtEnd(rung)
	declarer := connect(t, b.url).(retryRungDeclarer)

	for range 2 {
		if err := declarer.DeclareRetryRung(testContext(t), queue, rung, 2*time.Second); err != nil {
			t.Fatalf("DeclareRetryRung: %v", err)
		}
	}
}
