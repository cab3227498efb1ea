package ordering

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// journal records, per key, the sequence numbers in the order they were
// handled, every id's handling count, and how many handlers ran at once per
// key and overall.
type journal struct {
	changed    chan struct{} // told after each message handled
	overlapped chan struct{} // closed when two handlers first ran at once
	company    sync.Once     // the first handler's wait for a second
	mu         sync.Mutex
	order      map[string][]int
	handled    map[string]int
	perKey     map[string]int
	running    int
	mostAtAll  int
	mostInKey  int
}

func newJournal() *journal {
	return &journal{order: map[string][]int{}, handled: map[string]int{}, perKey: map[string]int{}, changed: make(chan struct{}, 1), overlapped: make(chan struct{})}
}

func (j *journal) begin(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.running++
	j.perKey[key]++
	if j.running == 2 && j.mostAtAll == 1 {
		close(j.overlapped)
	}
	j.mostAtAll = max(j.mostAtAll, j.running)
	j.mostInKey = max(j.mostInKey, j.perKey[key])
}

func (j *journal) end(key, id string, seq int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.running--
	j.perKey[key]--
	j.order[key] = append(j.order[key], seq)
	j.handled[id]++
	select {
	case j.changed <- struct{}{}:
	default:
	}
}

// awaitCompany holds the first handler that calls it until a second handler
// has begun beside it, at most within: handlers of different keys are seen to
// overlap, whatever a handler's own duration. The handlers after it pass at
// once (sync.Once makes them wait only for the first's wait to end), and
// when no second handler came, mostAtAll stays 1 and the test says so.
func (j *journal) awaitCompany(within time.Duration) {
	j.company.Do(func() {
		select {
		case <-j.overlapped:
		case <-time.After(within):
		}
	})
}

func (j *journal) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.handled)
}

// orderedConsumer starts a streaming consumer of queue (bound to exchange)
// with workers sharing one Middleware(ByHeader("x-order-id")) handler over inner.
func orderedConsumer(t *testing.T, url, exchange, queue string, workers int, batch uint16, inner messaging.Handler) messaging.Connector {
	t.Helper()
	return orderedConsumerBy(t, url, exchange, queue, workers, batch, ByHeader("x-order-id"), inner)
}

// orderedConsumerBy is orderedConsumer ordering by key.
func orderedConsumerBy(t *testing.T, url, exchange, queue string, workers int, batch uint16, key Key, inner messaging.Handler) messaging.Connector {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	// A second's window: this machine runs other suites at once, and a worker
	// starved of CPU for longer than the default window can be overtaken
	// (GapSkipped reports it).
	handler := Middleware(key, Options.ArrivalWindow(time.Second), Options.Monitor(testMonitor(t)))(inner)
	handlers := make([]messaging.Handler, workers)
	for i := range handlers {
		handlers[i] = handler
	}
	consumer := streaming.New(transport,
		streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(handlers...),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.BatchCapacity(batch),
		)),
	)
	listening := make(chan struct{})
	go func() { consumer.Listen(); close(listening) }()
	t.Cleanup(func() {
		_ = consumer.Close()
		select {
		case <-listening:
		case <-time.After(30 * time.Second):
			t.Error("Listen did not return after Close")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	return transport
}

// testMonitor logs each skipped gap: a delivery that took longer than the
// arrival window from the runtime's buffer to the handler.
func testMonitor(t *testing.T) Monitor { return &logMonitor{t: t} }

type logMonitor struct {
	NopMonitor
	t *testing.T
}

func (m *logMonitor) GapSkipped(queue string) {
	m.t.Logf("a gap in the delivery tags of %s outlived the arrival window", queue)
}

// publishKeyed publishes total messages round the keys, in order, with
// x-order-id and the correlation id = key, and a message id naming the
// sequence number within the key.
func publishKeyed(t *testing.T, transport messaging.Connector, exchange string, keys []string, total int) {
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
	dispatches := make([]messaging.Dispatch, 0, total)
	for i := range total {
		key := keys[i%len(keys)]
		dispatches = append(dispatches, messaging.Dispatch{Topic: exchange, MessageID: fmt.Sprintf("%s/%d", key, i/len(keys)), CorrelationID: key,
			MessageType: "ordered", Mandatory: true, Headers: map[string]any{"x-order-id": key}, Payload: []byte("{}")})
	}
	for len(dispatches) > 0 {
		n := min(len(dispatches), 250)
		if _, err := writer.Write(ctx, dispatches[:n]...); err != nil {
			t.Fatal(err)
		}
		dispatches = dispatches[n:]
	}
}

func parse(id string) (key string, seq int) {
	key, number, _ := strings.Cut(id, "/")
	fmt.Sscan(number, &seq)
	return key, seq
}

// TestEachKeyIsHandledInPublishedOrderWhileKeysOverlap publishes messages
// over several keys to a queue read by 8 workers sharing one ordering handler
// (1,000 over 20 keys; 10 keys of 200; 1,000 over 20 keys in batches of up to
// 4): every message is handled once, per key in the published order and never
// two at once, and handlers of different keys overlap (measured).
func TestEachKeyIsHandledInPublishedOrderWhileKeysOverlap(t *testing.T) {
	url := testenv.Broker(t)
	for _, shape := range []struct {
		keys, each int
		batch      uint16
	}{{20, 50, 1}, {10, 200, 1}, {20, 50, 4}} {
		t.Run(fmt.Sprintf("%d keys x %d, batches of %d", shape.keys, shape.each, shape.batch), func(t *testing.T) {
			orderedPerKey(t, url, shape.keys, shape.each, shape.batch, ByHeader("x-order-id"))
		})
	}
}

// TestByCorrelationKeepsEachConversationInOrder: the same through
// ByCorrelation, 20 conversations (correlation ids) of 50 messages.
func TestByCorrelationKeepsEachConversationInOrder(t *testing.T) {
	orderedPerKey(t, testenv.Broker(t), 20, 50, 1, ByCorrelation())
}

func orderedPerKey(t *testing.T, url string, keyCount, each int, batch uint16, key Key) {
	total, workers := keyCount*each, 8
	keys := ids("order-", keyCount)
	queue, exchange := testenv.Name(t, "ordering"), testenv.Name(t, "ordering-x")
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })

	j := newJournal()
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, message := range messages {
			d := message.(messaging.Delivery)
			key, seq := parse(d.MessageID)
			j.begin(key)
			j.awaitCompany(10 * time.Second)
			j.end(key, d.MessageID, seq)
		}
	})
	transport := orderedConsumerBy(t, url, exchange, queue, workers, batch, key, inner)
	started := time.Now()
	publishKeyed(t, transport, exchange, keys, total)
	j.waitFor(t, total)
	t.Logf("%d messages over %d keys through %d workers in %s; at most %d handlers at once, %d within one key",
		total, len(keys), workers, time.Since(started).Round(time.Millisecond), j.mostAtAll, j.mostInKey)

	j.mu.Lock()
	defer j.mu.Unlock()
	for id, n := range j.handled {
		if n != 1 {
			t.Errorf("message %s handled %d times", id, n)
		}
	}
	if len(j.handled) != total {
		t.Errorf("%d messages handled; want %d", len(j.handled), total)
	}
	for _, key := range keys {
		seqs := j.order[key]
		for i, seq := range seqs {
			if seq != i {
				t.Fatalf("key %s handled in the order %v; want 0, 1, 2, ...", key, seqs)
			}
		}
	}
	if j.mostInKey != 1 {
		t.Errorf("%d handlers of one key ran at once; want 1", j.mostInKey)
	}
	if j.mostAtAll < 2 {
		t.Errorf("at most %d handler ran at once across %d keys and %d workers; different keys must run in parallel", j.mostAtAll, len(keys), workers)
	}
}

// TestAKeyThatFailsDoesNotHoldUpTheOthers: every message of one key panics
// (the runtime dead-letters it) while the other keys' messages are handled,
// each once and in order; each failed one is counted by id in {queue}.dlq.
func TestAKeyThatFailsDoesNotHoldUpTheOthers(t *testing.T) {
	url := testenv.Broker(t)
	const total, workers = 400, 4
	keys := []string{"bad", "k1", "k2", "k3"}
	queue, exchange := testenv.Name(t, "ordering-fail"), testenv.Name(t, "ordering-fail-x")
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })

	j := newJournal()
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, message := range messages {
			d := message.(messaging.Delivery)
			key, seq := parse(d.MessageID)
			if key == "bad" {
				panic(fmt.Errorf("order %s cannot be handled", d.MessageID))
			}
			j.begin(key)
			j.end(key, d.MessageID, seq)
		}
	})
	transport := orderedConsumer(t, url, exchange, queue, workers, 1, inner)
	publishKeyed(t, transport, exchange, keys, total)
	good := total - total/len(keys)
	j.waitFor(t, good)

	dead := drain(t, url, queue+".dlq", total/len(keys))
	for i := range total / len(keys) {
		if id := fmt.Sprint("bad/", i); dead[id] != 1 {
			t.Errorf("%s is in the dead-letter queue %d times; want 1", id, dead[id])
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.handled) != good {
		t.Errorf("%d messages handled; want %d", len(j.handled), good)
	}
	for _, key := range keys[1:] {
		for i, seq := range j.order[key] {
			if seq != i {
				t.Fatalf("key %s handled in the order %v", key, j.order[key])
			}
		}
	}
}

// waitFor waits, at most a minute, for n distinct messages to be handled.
func (j *journal) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for j.count() < n {
		select {
		case <-j.changed:
		case <-deadline.C:
			t.Fatalf("%d of %d messages handled within a minute", j.count(), n)
		}
	}
}

// drain consumes want messages from queue and counts them by message id.
func drain(t *testing.T, url, queue string, want int) map[string]int {
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
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for got := 0; got < want; got++ {
		select {
		case d := <-deliveries:
			counts[d.MessageId]++
		case <-deadline.C:
			t.Fatalf("%d of %d messages reached %s within a minute", got, want, queue)
		}
	}
	return counts
}
