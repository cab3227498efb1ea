package topology_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/topology"
)

// On the real broker: a plan applied checks healthy; a queue that exists as
// classic where the plan says quorum differs, in RabbitMQ's words; nothing
// missing is created by a check.
func TestCheckAgainstRabbitMQ(t *testing.T) {
	ctx, declarer := rabbitMQDeclarer(t)
	exchange := testenv.Name(t, "orders")
	queue := exchange + ".new"
	t.Cleanup(func() {
		for _, q := range []string{queue, queue + ".dlq", queue + ".parked"} {
			_ = declarer.DeleteQueue(context.Background(), q)
		}
		_ = declarer.DeleteExchange(context.Background(), exchange)
	})
	plan, err := topology.ForStream(messaging.StreamConfig{
		StreamName: queue, EstablishTopology: true, DeadLetters: true, Replication: true,
		Bindings: []messaging.StreamBinding{{Exchange: exchange, Kind: messaging.ExchangeTopic, Key: "order.*"}},
	})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}

	report, err := plan.Check(ctx, declarer)
	if err != nil || report.Healthy() || report[0].State != topology.Missing {
		t.Fatalf("check before anything exists = %v\n%s; want the exchange missing", err, report)
	}
	if _, err := declarer.InspectQueue(ctx, queue); err == nil {
		t.Fatal("the check created the queue")
	}

	if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: queue, Durable: true}); err != nil {
		t.Fatalf("declare the queue classic: %v", err)
	}
	report, err = plan.Check(ctx, declarer)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	t.Logf("check of a classic queue against a quorum plan:\n%s", report)
	var differs bool
	for _, f := range report {
		if f.What == "queue" && f.Name == queue {
			differs = f.State == topology.Differs && strings.Contains(f.Detail, "PRECONDITION_FAILED - inequivalent arg")
		}
	}
	if !differs {
		t.Fatalf("the classic queue is not reported as differing in the broker's words:\n%s", report)
	}

	if err := declarer.DeleteQueue(ctx, queue); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := plan.Apply(ctx, declarer); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if report, err = plan.Check(ctx, declarer); err != nil || !report.Healthy() {
		t.Fatalf("check after apply = %v\n%s; want healthy", err, report)
	}
}

// rabbitMQDeclarer connects to the local broker, under its shared lock, and
// finds the connection's Declarer; both go with the test.
func rabbitMQDeclarer(t *testing.T) (context.Context, messaging.Declarer) {
	transport := rabbitmq.New(rabbitmq.Options.Address(testenv.Broker(t)))
	t.Cleanup(func() { _ = transport.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		t.Fatal("the rabbitmq connection offers no Declarer")
	}
	return ctx, declarer
}

// On the real broker: a stream queue written as a plain literal (Durable
// left false), and the source queue of a stream config asking for a stream
// with dead letters and a transient, exclusive, auto-delete queue, are
// declared as RabbitMQ accepts a stream: durable, shared, kept, without the
// dead-letter arguments it refuses on a stream.
func TestAStreamQueueIsAppliedOnRabbitMQ(t *testing.T) {
	ctx, declarer := rabbitMQDeclarer(t)
	log, events := testenv.Name(t, "orders.log"), testenv.Name(t, "orders.events")
	t.Cleanup(func() {
		for _, q := range []string{log, events, events + ".dlq", events + ".parked"} {
			_ = declarer.DeleteQueue(context.Background(), q)
		}
	})
	byHand := topology.Plan{Queues: []messaging.Queue{{Name: log, Type: messaging.QueueStream, Arguments: map[string]any{"x-max-age": "7D"}}}}
	fromConfig, err := topology.ForStream(messaging.StreamConfig{
		StreamName: events, EstablishTopology: true, DeadLetters: true,
		QueueType: messaging.QueueStream, TransientStream: true, ExclusiveStream: true, AutoDeleteStream: true,
	})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	plan := byHand.Merge(fromConfig)
	if err := plan.Apply(ctx, declarer); err != nil {
		t.Fatalf("apply %s: %v; want the streams declared", plan, err)
	}
	if report, err := plan.Check(ctx, declarer); err != nil || !report.Healthy() {
		t.Fatalf("check after apply = %v\n%s; want healthy", err, report)
	}
	stream := messaging.Queue{Name: log, Type: messaging.QueueStream, Durable: true, Arguments: map[string]any{"x-max-age": "7D"}}
	if err := declarer.DeclareQueue(ctx, stream); err != nil {
		t.Fatalf("redeclare %s durable: %v; want it accepted, the same queue", log, err)
	}
	stream.Exclusive, stream.AutoDelete = true, true
	if err := declarer.DeclareQueue(ctx, stream); err != nil {
		t.Fatalf("declare %s exclusive and auto-delete through the Declarer: %v; want it declared as a stream is", log, err)
	}
}
