package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/patterns/schedule"
	"github.com/warrenmq/messaging/rabbitmq"
)

// brokerFixture declares a subscription queue and its dead-letter queue on
// the local broker, with n dead-lettered messages d0..d{n-1} (even ones of
// type OrderPlaced, odd ones OrderCancelled; a reason naming a timeout for
// every third), and deletes them when the test ends.
func brokerFixture(t *testing.T, address string, n int) (string, messaging.Declarer) {
	t.Helper()
	queue := testenv.Name(t, "cli-ops")
	transport := rabbitmq.New(rabbitmq.Options.Address(address))
	t.Cleanup(func() { _ = transport.Close() })
	ctx := context.Background()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	declarer, _ := messaging.As[messaging.Declarer](conn)
	for _, q := range []string{queue, wire.DeadLetterQueue(queue)} {
		if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: q, Durable: true}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{queue, wire.DeadLetterQueue(queue), wire.ParkedQueue(queue)} {
			_ = declarer.DeleteQueue(context.Background(), q)
		}
	})
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	for i := range n {
		kind, reason := "OrderPlaced", "exhausted 5 attempts: refused"
		if i%2 == 1 {
			kind = "OrderCancelled"
		}
		if i%3 == 0 {
			reason = "exhausted 5 attempts: timeout"
		}
		if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: wire.DeadLetterQueue(queue), MessageID: fmt.Sprint("d", i), MessageType: kind,
			Attempt: 5, Error: reason, Headers: map[string]any{"tenant": fmt.Sprint("t", i%2)}, Payload: []byte("{}"), Mandatory: true}); err != nil {
			t.Fatal(err)
		}
	}
	return queue, declarer
}

func depth(t *testing.T, declarer messaging.Declarer, queue string) int {
	t.Helper()
	state, err := declarer.InspectQueue(context.Background(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return state.Messages
}

// The replay verb: a dry run lists what would move and moves nothing; the
// filters and the limit move exactly what they select; a replay into an
// exchange nothing is bound to fails (exit status 1) and loses nothing.
func TestReplayAgainstTheLocalBroker(t *testing.T) {
	address := testenv.Broker(t)
	queue, declarer := brokerFixture(t, address, 12)
	dlq := wire.DeadLetterQueue(queue)
	ctx := context.Background()

	out := &bytes.Buffer{}
	if err := run(ctx, []string{"replay", "-amqp", address, "-dry-run", "-type", "OrderPlaced", dlq}, out, out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "would move 6, skipped 6 (drained) to queue "+queue) || !hasRow(out.String(), "move", "d4", "OrderPlaced") || !hasRow(out.String(), "skip", "d1", "OrderCancelled") {
		t.Fatalf("the dry run printed:\n%s", out)
	}
	if depth(t, declarer, dlq) != 12 || depth(t, declarer, queue) != 0 {
		t.Fatal("the dry run moved something")
	}

	out.Reset()
	// Even and a multiple of 3 (d0, d6), tenant t0: d0 and d6; the limit takes one.
	err := run(ctx, []string{"replay", "-amqp", address, "-json", "-type", "OrderPlaced", "-error", "timeout", "-header", "tenant=t0", "-limit", "1", dlq}, out, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var report replayReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if report.Moved != 1 || report.Skipped != 0 || report.Reason != "limit" || len(report.Messages) != 1 || report.Messages[0].ID != "d0" {
		t.Fatalf("report %+v", report)
	}
	if depth(t, declarer, dlq) != 11 || depth(t, declarer, queue) != 1 {
		t.Fatalf("after moving one: %d in %s, %d in %s", depth(t, declarer, dlq), dlq, depth(t, declarer, queue), queue)
	}

	out.Reset()
	err = run(ctx, []string{"replay", "-amqp", address, "-exchange", "amq.direct", "-key", "nobody-" + queue, dlq}, out, out)
	if err == nil || errors.Is(err, errUsage) || !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("replay into nowhere: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "moved 0, skipped 0 (failed)") || depth(t, declarer, dlq) != 11 {
		t.Fatalf("replay into nowhere printed:\n%s", out)
	}

	for _, args := range [][]string{{"replay"}, {"replay", "a", "b"}, {"replay", "-limit", "-1", "x.dlq"}, {"replay", "-header", "novalue", "x.dlq"}} {
		if err := run(ctx, args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
	out.Reset()
	const password = "s3cretpw1"
	err = run(ctx, []string{"replay", "-amqp", "amqp://guest:" + password + "@127.0.0.1:5672/", "-timeout", "5s", dlq}, out, out)
	if err == nil || strings.Contains(out.String()+err.Error(), password) || !strings.Contains(err.Error(), "xxxxx") {
		t.Fatalf("a wrong password: %v\n%s", err, out)
	}
}

// The queues verb lists the dead-letter, parking and rung queues of a
// subscription set, and exits with errAttention while a dead-letter queue
// holds messages.
func TestQueuesAgainstTheLocalBroker(t *testing.T) {
	address := testenv.Broker(t)
	queue, _ := brokerFixture(t, address, 2)
	out := &bytes.Buffer{}
	err := run(context.Background(), []string{"queues", "-amqp", address, "-policy", "exponential:6:10s:5m", queue + "=orders:topic:order.*"}, out, out)
	if !errors.Is(err, errAttention) {
		t.Fatalf("want errAttention, got %v\n%s", err, out)
	}
	for _, want := range [][]string{
		{wire.DeadLetterQueue(queue), "dead-letter", "2"},
		{wire.ParkedQueue(queue), "parked", "missing"},
		{queue + ".retry.40s", "retry", "rung", "40s", "missing"},
		{queue + ".retry.80s"}, {queue + ".retry.160s"},
	} {
		if !hasRow(out.String(), want...) {
			t.Errorf("the listing lacks %q:\n%s", want, out)
		}
	}
	out.Reset()
	err = run(context.Background(), []string{"queues", "-amqp", address, "-json", queue}, out, out)
	var listing struct {
		Queues   []queueDepth `json:"queues"`
		SetAside int          `json:"set_aside"`
	}
	if jsonErr := json.Unmarshal(out.Bytes(), &listing); jsonErr != nil || !errors.Is(err, errAttention) {
		t.Fatalf("%v %v:\n%s", jsonErr, err, out)
	}
	if listing.SetAside != 2 || len(listing.Queues) != 2 || listing.Queues[0].Messages != 2 || !listing.Queues[1].Missing {
		t.Fatalf("listing %+v", listing)
	}
	for _, args := range [][]string{{"queues"}, {"queues", "-policy", "linear:3:1s", "q"}, {"queues", "-policy", "fixed:0:1s", "q"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// The schedule topology verb prints the ladder, as JSON too, and checks it
// against the local broker: healthy once applied, missing once a rung is
// deleted. Deleting a shared rung disturbs other users of the broker, so the
// test holds the exclusive lock.
func TestScheduleTopologyAgainstTheLocalBroker(t *testing.T) {
	out := &bytes.Buffer{}
	if err := run(context.Background(), []string{"schedule", "topology"}, out, out); err != nil {
		t.Fatal(err)
	}
	if out.String() != schedule.Topology().String() || !strings.Contains(out.String(), "declare queue acemq.schedule.1m (classic, durable, x-dead-letter-exchange=acemq.schedule, x-dead-letter-routing-key=acemq.schedule.due, x-message-ttl=60000)") {
		t.Fatalf("printed:\n%s", out)
	}
	out.Reset()
	if err := run(context.Background(), []string{"schedule", "topology", "-json"}, out, out); err != nil {
		t.Fatal(err)
	}
	var plan planJSON
	if err := json.Unmarshal(out.Bytes(), &plan); err != nil || len(plan.Queues) != 6 || plan.Queues[0].Arguments["x-message-ttl"] != float64(3600000) {
		t.Fatalf("%v: %+v", err, plan)
	}

	address := testenv.Disrupt(t)
	transport := rabbitmq.New(rabbitmq.Options.Address(address))
	defer transport.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	if err := schedule.Topology().Apply(ctx, declarer); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(ctx, []string{"schedule", "topology", "-check", "-amqp", address}, out, out); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	rung := schedule.RungName(time.Second)
	if err := declarer.DeleteQueue(ctx, rung); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = schedule.Topology().Apply(context.Background(), declarer) }()
	out.Reset()
	err = run(ctx, []string{"schedule", "topology", "-check", "-json", "-amqp", address}, out, out)
	if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "2 missing") {
		t.Fatalf("want the check to fail with the rung and its binding missing, got %v\n%s", err, out)
	}
	var report struct {
		Healthy  bool          `json:"healthy"`
		Findings []findingJSON `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil || report.Healthy {
		t.Fatalf("%v: %s", err, out)
	}
	missing := 0
	for _, f := range report.Findings {
		if f.State == "missing" {
			missing++
			if !strings.Contains(f.Name, rung) {
				t.Errorf("missing %s, want %s or its binding", f.Name, rung)
			}
		}
	}
	if missing != 2 {
		t.Fatalf("%d missing:\n%s", missing, out)
	}
	for _, args := range [][]string{{"schedule"}, {"schedule", "ladder"}, {"schedule", "topology", "extra"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%q: want a usage error, got %v", args, err)
		}
	}
}

// hasRow reports whether a line of a table starts with fields.
func hasRow(table string, fields ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Fields(line)
		if len(cells) >= len(fields) && slices.Equal(cells[:len(fields)], fields) {
			return true
		}
	}
	return false
}
