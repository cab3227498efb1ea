package streams

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// brokerStream declares a fresh stream on the local broker and deletes it
// (and its set-aside queues) when the test ends.
func brokerStream(t *testing.T, url, prefix string, r Retention) (messaging.Connector, string) {
	t.Helper()
	name := testenv.Name(t, prefix)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	t.Cleanup(func() { testenv.DeleteTopology(url, nil, name, name+".dlq", name+".parked") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := Declare(ctx, conn, name, r); err != nil {
		t.Fatal(err)
	}
	return transport, name
}

// publish appends the messages ids[i] to the stream through the library's
// confirmed writer.
func publish(t testing.TB, transport messaging.Connector, stream string, ids ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
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
	const chunk = 500
	for start := 0; start < len(ids); start += chunk {
		end := min(start+chunk, len(ids))
		dispatches := make([]messaging.Dispatch, 0, end-start)
		for _, id := range ids[start:end] {
			dispatches = append(dispatches, messaging.Dispatch{RoutingKey: stream, MessageID: id, Payload: []byte(id), Mandatory: true})
		}
		if n, err := writer.Write(ctx, dispatches...); err != nil || n != len(dispatches) {
			t.Fatalf("published %d of %d: %v", n, len(dispatches), err)
		}
	}
}

func ids(prefix string, from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%05d", prefix, i))
	}
	return out
}

// seen records what a handler was handed, by message id and offset, in order.
type seen struct {
	mu      sync.Mutex
	ids     []string
	offsets []uint64
	count   map[string]int
	changed chan struct{}
}

func newSeen() *seen { return &seen{count: map[string]int{}, changed: make(chan struct{}, 1)} }

func (s *seen) add(d messaging.Delivery) {
	offset, ok := OffsetOf(d)
	s.mu.Lock()
	s.ids = append(s.ids, d.MessageID)
	if ok {
		s.offsets = append(s.offsets, offset)
	}
	s.count[d.MessageID]++
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// handler records every envelope of each batch.
func (s *seen) handler() messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		for _, d := range messaging.DeliveriesFrom(ctx) {
			s.add(d)
		}
	})
}

// waitFor waits (bounded) until done reports true of what was seen.
func (s *seen) waitFor(t *testing.T, what string, done func(s *seen) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ok := done(s)
		n := len(s.ids)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("waiting for %s: %d deliveries seen", what, n)
		}
	}
}

func (s *seen) distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.count)
}

func read(t *testing.T, transport messaging.Connector, stream string, h messaging.Handler, options ...Option) *Reader {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r, err := Read(ctx, transport, stream, h, append([]Option{Options.Logger(quiet)}, options...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// parkedCopies takes every message off {stream}.parked (at most 100).
func parkedCopies(t *testing.T, url, stream string) []amqp.Delivery {
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
	var copies []amqp.Delivery
	for range 100 {
		d, ok, err := ch.Get(stream+".parked", true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		copies = append(copies, d)
	}
	return copies
}
