package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq"
)

// brokerQueues declares a source queue and its dead-letter queue (classic,
// durable) under unique names, deletes them when the test ends, and returns
// the source's name.
func brokerQueues(t *testing.T, url string, transport messaging.Connector) string {
	t.Helper()
	source := testenv.Name(t, "replay")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		t.Fatal("the rabbitmq connection declares no topology")
	}
	for _, q := range []string{source, wire.DeadLetterQueue(source)} {
		if err := declarer.DeclareQueue(ctx, messaging.Queue{Name: q, Durable: true}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		_, _ = ch.QueueDelete(source, false, false, false)
		_, _ = ch.QueueDelete(wire.DeadLetterQueue(source), false, false, false)
	})
	return source
}

// deadLetter publishes n dead-lettered copies d0..d{n-1} to queue, as the
// settlement decorator sets them aside: attempt 5, a reason.
func deadLetter(t *testing.T, transport messaging.Connector, queue string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	dispatches := make([]messaging.Dispatch, 0, 250)
	for i := range n {
		dispatches = append(dispatches, messaging.Dispatch{
			RoutingKey: queue, MessageID: fmt.Sprint("d", i), MessageType: "OrderPlaced", Mandatory: true,
			Attempt: 5, Error: fmt.Sprintf("exhausted 5 attempts: timeout on %d", i),
			Headers: map[string]any{"tenant": "t1"}, ContentType: "application/json", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i)),
		})
		if len(dispatches) == cap(dispatches) || i == n-1 {
			if _, err := writer.Write(ctx, dispatches...); err != nil {
				t.Fatal(err)
			}
			dispatches = dispatches[:0]
		}
	}
}

// take empties queue with basic.get (auto-ack) and returns every message by
// id, with how many copies of each it held.
func take(t *testing.T, url, queue string) (map[string]amqp.Delivery, map[string]int) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	got, copies := map[string]amqp.Delivery{}, map[string]int{}
	for {
		d, ok, err := ch.Get(queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return got, copies
		}
		got[d.MessageId] = d
		copies[d.MessageId]++
	}
}

func quietTransport(url string) messaging.Connector {
	return rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// TestTwoThousandDeadLettersAFilterAndALimit replays 2,000 messages from
// {q}.dlq with a filter that declines 31 of them and a limit of 500: exactly
// 500 arrive in {q}, stamped and on attempt 1, and the other 1,500 (the 31
// declined among them) are still in {q}.dlq, each once.
func TestTwoThousandDeadLettersAFilterAndALimit(t *testing.T) {
	url := testenv.Broker(t)
	transport := quietTransport(url)
	defer transport.Close()
	source := brokerQueues(t, url, transport)
	dlq := wire.DeadLetterQueue(source)
	const total = 2000
	deadLetter(t, transport, dlq, total)

	// d0, d17, ... d510 are declined: 31 messages among the first 531, which
	// hold the 500 the limit allows.
	declined := func(n int) bool { return n%17 == 0 && n < 527 }
	started := time.Now().UTC().Add(-time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	result, err := Run(ctx, transport, From{Queue: dlq, Limit: 500, Filter: func(d messaging.Delivery) bool {
		var n int
		fmt.Sscanf(d.MessageID, "d%d", &n)
		return !declined(n)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Result{Moved: 500, Skipped: 31, Reason: Limit}); result != want {
		t.Fatalf("result %v, want %v", result, want)
	}
	if result.String() != "moved 500, skipped 31 (limit)" {
		t.Fatalf("result reads %q", result)
	}

	moved, movedCopies := take(t, url, source)
	left, leftCopies := take(t, url, dlq)
	if len(moved) != 500 || len(left) != total-500 {
		t.Fatalf("%d moved and %d left, want 500 and %d", len(moved), len(left), total-500)
	}
	for i := range total {
		id := fmt.Sprint("d", i)
		d, isMoved := moved[id]
		_, isLeft := left[id]
		switch {
		case isMoved == isLeft:
			t.Fatalf("%s: moved %v, left %v; want exactly one", id, isMoved, isLeft)
		case movedCopies[id]+leftCopies[id] != 1:
			t.Fatalf("%s: %d copies", id, movedCopies[id]+leftCopies[id])
		case declined(i) && !isLeft:
			t.Fatalf("%s was declined but moved", id)
		case i > 530 && !isLeft:
			t.Fatalf("%s is past the limit but moved", id)
		}
		if !isMoved {
			continue
		}
		if d.Headers[HeaderReplayedFrom] != dlq || d.Headers[HeaderReplayCount] != int32(1) {
			t.Fatalf("%s stamps: %v", id, d.Headers)
		}
		at, err := time.Parse(time.RFC3339, fmt.Sprint(d.Headers[HeaderReplayedAt]))
		if err != nil || at.Before(started) || at.After(time.Now().Add(time.Second)) || at.Location() != time.UTC {
			t.Fatalf("%s replayed-at %v (%v)", id, d.Headers[HeaderReplayedAt], err)
		}
		if d.Headers[wire.HeaderAttempt] != int32(1) || d.Headers[wire.HeaderError] != nil {
			t.Fatalf("%s attempt %v error %v, want 1 and none", id, d.Headers[wire.HeaderAttempt], d.Headers[wire.HeaderError])
		}
		if d.Headers["tenant"] != "t1" || d.Type != "OrderPlaced" || d.ContentType != "application/json" || d.DeliveryMode != amqp.Persistent {
			t.Fatalf("%s envelope changed: %+v", id, d)
		}
	}
}

// TestAReplayIntoAnUnboundDestinationMovesNothingAndLosesNothing replays
// into a direct exchange nothing is bound to: the pass stops at the first
// message with Reason failed and an unroutable error, and all 50 are still
// in the dead-letter queue.
func TestAReplayIntoAnUnboundDestinationMovesNothingAndLosesNothing(t *testing.T) {
	url := testenv.Broker(t)
	transport := quietTransport(url)
	defer transport.Close()
	source := brokerQueues(t, url, transport)
	dlq := wire.DeadLetterQueue(source)
	deadLetter(t, transport, dlq, 50)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	result, err := Run(ctx, transport, From{Queue: dlq, Topic: "amq.direct", RoutingKey: "nobody-" + source})
	if !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("error %v, want one matching messaging.ErrUnroutable", err)
	}
	if result != (Result{Reason: Failed}) {
		t.Fatalf("result %v", result)
	}
	left, copies := take(t, url, dlq)
	if len(left) != 50 {
		t.Fatalf("%d left in %s, want 50", len(left), dlq)
	}
	for i := range 50 {
		if copies[fmt.Sprint("d", i)] != 1 {
			t.Fatalf("d%d: %d copies", i, copies[fmt.Sprint("d", i)])
		}
	}
	if moved, _ := take(t, url, source); len(moved) != 0 {
		t.Fatalf("%d arrived in %s", len(moved), source)
	}
}

// TestConnectionsClosedInTheMiddleOfAReplayLoseNothing closes every broker
// connection while a 2,000-message replay runs, then replays again until
// the dead-letter queue is drained: every message is in the destination,
// none lost; the duplicates (a copy that landed whose original was not yet
// acknowledged) are counted and allowed.
func TestConnectionsClosedInTheMiddleOfAReplayLoseNothing(t *testing.T) {
	url := testenv.Disrupt(t)
	transport := quietTransport(url)
	defer transport.Close()
	source := brokerQueues(t, url, transport)
	dlq := wire.DeadLetterQueue(source)
	const total = 2000
	deadLetter(t, transport, dlq, total)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The pass is stopped in its tracks at the first batch past 500: the
	// connections are closed before it goes on.
	moved, disrupted := 0, false
	first, err := Run(ctx, transport, From{Queue: dlq}, Options.Each(func(messaging.Delivery, Verdict) {
		moved++
		if moved >= 500 && !disrupted {
			disrupted = true
			testenv.Rabbitmqctl(t, "close_all_connections", "replay test disruption")
		}
	}))
	if err == nil || first.Reason != Failed {
		t.Fatalf("the disrupted pass: %v, %v; want it to fail", first, err)
	}
	t.Logf("the disrupted pass: %v: %v", first, err)

	// Passes are run again, as an operator would, while the connector redials.
	passes := []Result{first}
	var lastErr error
	if !testenv.Poll(30*time.Second, func() bool {
		result, err := Run(ctx, transport, From{Queue: dlq})
		passes, lastErr = append(passes, result), err
		return err == nil && result.Reason == Drained
	}) {
		t.Fatalf("no pass drained %s within 30 s: %v (last error %v)", dlq, passes, lastErr)
	}
	arrived, copies := take(t, url, source)
	left, _ := take(t, url, dlq)
	duplicates, movedTotal := 0, 0
	for _, r := range passes {
		movedTotal += r.Moved
	}
	for i := range total {
		id := fmt.Sprint("d", i)
		if copies[id] == 0 {
			t.Fatalf("%s was lost: not in %s (%d left in %s)", id, source, len(left), dlq)
		}
		duplicates += copies[id] - 1
	}
	if len(left) != 0 || len(arrived) != total {
		t.Fatalf("%d arrived, %d left", len(arrived), len(left))
	}
	if movedTotal < total || movedTotal > total+duplicates+1 {
		t.Fatalf("passes moved %d in all (%v), %d duplicates", movedTotal, passes, duplicates)
	}
	t.Logf("passes %v: %d distinct messages arrived, %d duplicate(s)", passes, len(arrived), duplicates)
}
