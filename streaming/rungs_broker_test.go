package streaming

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/retrypolicy"
)

// The rungs of the subscription's retry policy and the queue's acemq.retry
// binding exist once the consumer has started, before any message is retried.
func TestBrokerTheRetryRungsAreDeclaredWhenTheConsumerStarts(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "rungs-at-start")
	tool := newBrokerTool(t, url)
	tool.declare(url, queue)
	policy := retrypolicy.Fixed(3, 2*time.Second).WaitInBrokerFrom(time.Second)
	rungs := policy.Rungs(queue)
	if len(rungs) != 1 || rungs[0].Name != queue+".retry.2s" {
		t.Fatalf("the policy's ladder is %v; want one rung, %s.retry.2s", rungs, queue)
	}
	t.Cleanup(func() { _, _ = newBrokerTool(t, url).ch.QueueDelete(rungs[0].Name, false, false, false) })
	if _, err := tool.ch.QueueDeclarePassive(rungs[0].Name, true, false, false, false, nil); err == nil {
		t.Fatalf("the rung %s exists before the consumer starts", rungs[0].Name)
	}
	tool = newBrokerTool(t, url) // the refused passive declare closed the channel

	handler := messaging.HandlerFunc(func(context.Context, ...any) {})
	consumer := New(decodedTransport(t, url), Options.Logger(testLogger(t)), Options.Subscriptions(NewSubscription(queue,
		SubscriptionOptions.AddWorkers(handler), SubscriptionOptions.RetryPolicy(policy))))
	go consumer.Listen()
	t.Cleanup(func() { _ = consumer.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatalf("Started: %v", err)
	}

	// A passive declare finds it; declaring it with exactly the AceMQ family's
	// arguments succeeds only if the broker holds exactly these.
	if _, err := tool.ch.QueueDeclarePassive(rungs[0].Name, true, false, false, false, nil); err != nil {
		t.Fatalf("the rung %s was not declared when the consumer started: %v", rungs[0].Name, err)
	}
	if _, err := tool.ch.QueueDeclare(rungs[0].Name, true, false, false, false, amqp.Table{
		"x-message-ttl":             int64(2000),
		"x-dead-letter-exchange":    "acemq.retry",
		"x-dead-letter-routing-key": queue,
	}); err != nil {
		t.Fatalf("the rung %s does not have the AceMQ family's arguments: %v", rungs[0].Name, err)
	}
	listed := testenv.Rabbitmqctl(t, "list_bindings", "source_name", "destination_name", "routing_key")
	if !strings.Contains(listed, "acemq.retry\t"+queue+"\t"+queue) {
		t.Fatalf("queue %s is not bound to acemq.retry on its own name:\n%s", queue, listed)
	}
}
