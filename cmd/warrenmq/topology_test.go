package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

func TestTopologyPlanPrintsWhatTheSubscriptionsDeclare(t *testing.T) {
	out := &bytes.Buffer{}
	if err := run(context.Background(), []string{"topology", "plan", "-replication", "orders.new=orders:topic:order.*", "billing=payments"}, out, out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"declare exchange orders (topic, durable)\n",
		"declare queue orders.new (quorum, durable, x-dead-letter-exchange=acemq.dlx, x-dead-letter-routing-key=orders.new.dlq)\n",
		"declare queue billing.parked (classic, durable)\n",
		"bind orders -> orders.new (order.*)\n",
		"bind payments -> billing (\"\")\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("the plan lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"topology"}, {"topology", "plan"}, {"topology", "apply", "q"}, {"topology", "plan", "q=a:b"}, {"topology", "plan", "=x"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
	if err := run(context.Background(), []string{"topology", "plan", "q=x:lazy:k"}, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("an exchange of an unknown kind was planned")
	}
	out.Reset()
	if err := run(context.Background(), []string{"topology", "plan", "-json", "orders.new=orders:topic:order.*"}, out, out); err != nil {
		t.Fatal(err)
	}
	var plan planJSON
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil || len(plan.Exchanges) == 0 || len(plan.Bindings) == 0 {
		t.Fatalf("%v: %s", err, out)
	}
	if !slices.ContainsFunc(plan.Queues, func(q messaging.Queue) bool { return q.Name == "orders.new.dlq" }) {
		t.Fatalf("the plan lacks the dead-letter queue: %s", out)
	}
}

// The check against the local broker: a queue that exists classic where the
// subscriptions want quorum differs, in the broker's words, and the command fails.
func TestTopologyCheckAgainstTheLocalBroker(t *testing.T) {
	address := testenv.Broker(t)
	queue := testenv.Name(t, "cli")
	transport := rabbitmq.New(rabbitmq.Options.Address(address))
	defer transport.Close()
	conn, err := transport.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	declarer, _ := messaging.As[messaging.Declarer](conn)
	if err := declarer.DeclareQueue(context.Background(), messaging.Queue{Name: queue, Durable: true}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = declarer.DeleteQueue(context.Background(), queue) }()

	out := &bytes.Buffer{}
	err = run(context.Background(), []string{"topology", "check", "-amqp", address, "-replication", "-dead-letters=false", queue}, out, out)

	if err == nil || !strings.Contains(err.Error(), "0 missing, 1 differ") {
		t.Fatalf("check = %v; want it to fail with one difference\n%s", err, out)
	}
	if !strings.Contains(out.String(), "differs  queue    "+queue+": PRECONDITION_FAILED - inequivalent arg 'x-queue-type'") {
		t.Fatalf("the report does not name the difference in the broker's words:\n%s", out)
	}

	out.Reset()
	if err := run(context.Background(), []string{"topology", "check", "-amqp", address, "-dead-letters=false", queue}, out, out); err != nil {
		t.Fatalf("check of the classic queue as classic: %v\n%s", err, out)
	}
	out.Reset()
	err = run(context.Background(), []string{"topology", "check", "-json", "-amqp", address, "-replication", "-dead-letters=false", queue}, out, &bytes.Buffer{})
	var report struct {
		Healthy  bool          `json:"healthy"`
		Findings []findingJSON `json:"findings"`
	}
	if jsonErr := json.Unmarshal(out.Bytes(), &report); jsonErr != nil || exitCode(err) != exitFailed || report.Healthy ||
		!slices.ContainsFunc(report.Findings, func(f findingJSON) bool { return f.State == "differs" && f.Name == queue }) {
		t.Fatalf("check -json: %v %v\n%s", jsonErr, err, out)
	}
}
