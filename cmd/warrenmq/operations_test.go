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
	return fixtureWith(t, address, n, func(queue string, i int) messaging.Dispatch {
		kind, reason := "OrderPlaced", "exhausted 5 attempts: refused"
		if i%2 == 1 {
			kind = "OrderCancelled"
		}
		if i%3 == 0 {
			reason = "exhausted 5 attempts: timeout"
		}
		return messaging.Dispatch{RoutingKey: wire.DeadLetterQueue(queue), MessageID: fmt.Sprint("d", i), MessageType: kind,
			Attempt: 5, Error: reason, Headers: map[string]any{"tenant": fmt.Sprint("t", i%2)}, Payload: []byte("{}"), Mandatory: true}
	})
}

// fixtureWith declares a subscription queue and its dead-letter queue, with
// the n messages dispatch makes published 500 at a time, and deletes them
// when the test ends.
func fixtureWith(t *testing.T, address string, n int, dispatch func(queue string, i int) messaging.Dispatch) (string, messaging.Declarer) {
	t.Helper()
	queue := testenv.Name(t, "cli-ops")
	transport := rabbitmq.New(rabbitmq.Options.Address(address))
	t.Cleanup(func() { _ = transport.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
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
	batch := make([]messaging.Dispatch, 0, 500)
	for i := range n {
		batch = append(batch, dispatch(queue, i))
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := writer.Write(ctx, batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
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

// The replay verb: a dry run summarises what would move by reason (every
// message with -each) and moves nothing; the filters and the limit move
// exactly what they select; a replay into an exchange nothing is bound to
// fails (exit status 1) and loses nothing, one into a missing exchange or
// from a missing queue is exit status 4.
func TestReplayAgainstTheLocalBroker(t *testing.T) {
	address := testenv.Broker(t)
	queue, declarer := brokerFixture(t, address, 12)
	dlq := wire.DeadLetterQueue(queue)
	ctx := context.Background()

	out := &bytes.Buffer{}
	if err := run(ctx, []string{"replay", "-amqp", address, "-dry-run", "-type", "OrderPlaced", dlq}, out, &bytes.Buffer{}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Even ids are OrderPlaced; every third has the timeout reason.
	if !strings.Contains(out.String(), "would move 6, skipped 6 (drained) to queue "+queue+"; 0 failed, 12 left in "+dlq) ||
		!hasRow(out.String(), "move", "4", "exhausted", "5", "attempts:", "refused", "d2,d4,d8,d10") ||
		!hasRow(out.String(), "move", "2", "exhausted", "5", "attempts:", "timeout", "d0,d6") ||
		!hasRow(out.String(), "skip", "4", "exhausted", "5", "attempts:", "refused", "d1,d5,d7,d11") ||
		strings.Count(out.String(), "\n") != 6 {
		t.Fatalf("the dry run printed:\n%s", out)
	}
	out.Reset()
	if err := run(ctx, []string{"replay", "-amqp", address, "-dry-run", "-each", "-type", "OrderPlaced", dlq}, out, &bytes.Buffer{}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !hasRow(out.String(), "move", "d4", "OrderPlaced") || !hasRow(out.String(), "skip", "d1", "OrderCancelled") || strings.Count(out.String(), "\n") != 14 {
		t.Fatalf("the dry run with -each printed:\n%s", out)
	}
	if depth(t, declarer, dlq) != 12 || depth(t, declarer, queue) != 0 {
		t.Fatal("the dry run moved something")
	}

	out.Reset()
	// Even and a multiple of 3 (d0, d6), tenant t0: d0 and d6; the limit takes one.
	err := run(ctx, []string{"replay", "-amqp", address, "-json", "-each", "-type", "OrderPlaced", "-error", "timeout", "-header", "tenant=t0", "-limit", "1", dlq}, out, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var report replayReport
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if report.Moved != 1 || report.Skipped != 0 || report.Reason != "limit" || len(report.Messages) != 1 || report.Messages[0].ID != "d0" ||
		report.Depth != 12 || report.Left != 11 || report.Failed != 0 || len(report.Reasons) != 1 || report.Reasons[0].Count != 1 || report.Reasons[0].Verdict != "moved" {
		t.Fatalf("report %+v", report)
	}
	out.Reset()
	if err := run(ctx, []string{"replay", "-amqp", address, "-json", "-dry-run", dlq}, out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var summary map[string]any
	if err := json.Unmarshal(out.Bytes(), &summary); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	for _, field := range []string{"queue", "destination", "dry_run", "depth", "moved", "skipped", "failed", "left", "reason", "seconds", "reasons"} {
		if _, ok := summary[field]; !ok {
			t.Errorf("the report lacks %q:\n%s", field, out)
		}
	}
	if _, ok := summary["messages"]; ok || summary["moved"] != float64(11) {
		t.Errorf("without -each the report lists no messages:\n%s", out)
	}
	if depth(t, declarer, dlq) != 11 || depth(t, declarer, queue) != 1 {
		t.Fatalf("after moving one: %d in %s, %d in %s", depth(t, declarer, dlq), dlq, depth(t, declarer, queue), queue)
	}

	out.Reset()
	err = run(ctx, []string{"replay", "-amqp", address, "-exchange", "amq.direct", "-key", "nobody-" + queue, dlq}, out, &bytes.Buffer{})
	if exitCode(err) != exitFailed || !errors.Is(err, messaging.ErrUnroutable) || !strings.Contains(err.Error(), "run it again") {
		t.Fatalf("replay into nowhere: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "moved 0, skipped 0 (failed) to exchange amq.direct, key nobody-"+queue+"; 11 failed, 11 left in "+dlq) || depth(t, declarer, dlq) != 11 {
		t.Fatalf("replay into nowhere printed:\n%s", out)
	}
	out.Reset()
	err = run(ctx, []string{"replay", "-amqp", address, "-exchange", "nosuch-" + queue, dlq}, out, &bytes.Buffer{})
	if exitCode(err) != exitNotFound || depth(t, declarer, dlq) != 11 {
		t.Fatalf("replay into a missing exchange: exit %d, %v\n%s", exitCode(err), err, out)
	}
	stderr := &bytes.Buffer{}
	err = run(ctx, []string{"replay", "-amqp", address, queue + "-typo.dlq"}, out, stderr)
	if exitCode(err) != exitNotFound || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "check the name") {
		t.Fatalf("replay of a missing queue: exit %d, %v", exitCode(err), err)
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
		{queue, "subscription", "0"},
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
		NotFound []string     `json:"not_found"`
	}
	if jsonErr := json.Unmarshal(out.Bytes(), &listing); jsonErr != nil || exitCode(err) != exitAttention {
		t.Fatalf("%v %v:\n%s", jsonErr, err, out)
	}
	if listing.SetAside != 2 || len(listing.Queues) != 3 || listing.Queues[0].Role != "subscription" || listing.Queues[1].Messages != 2 || !listing.Queues[2].Missing ||
		listing.NotFound == nil || len(listing.NotFound) != 0 {
		t.Fatalf("listing %+v", listing)
	}

	// A mistyped queue name: exit status 4, named, with what to do; the
	// listing still shows the rest.
	out.Reset()
	err = run(context.Background(), []string{"queues", "-amqp", address, "-json", queue, queue + "-typo"}, out, &bytes.Buffer{})
	if exitCode(err) != exitNotFound || !strings.Contains(err.Error(), "no queue "+queue+"-typo on the broker") || !strings.Contains(err.Error(), "check the name") {
		t.Fatalf("a mistyped queue: exit %d, %v", exitCode(err), err)
	}
	listing.NotFound = nil
	if err := json.Unmarshal(out.Bytes(), &listing); err != nil || len(listing.Queues) != 6 || len(listing.NotFound) != 1 || listing.NotFound[0] != queue+"-typo" {
		t.Fatalf("%v: %+v", err, listing)
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
