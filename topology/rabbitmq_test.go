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
	transport := rabbitmq.New(rabbitmq.Options.Address(testenv.Broker(t)))
	defer func() { _ = transport.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		t.Fatal("the rabbitmq connection offers no Declarer")
	}
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
