package ordering

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/patterns/idempotency"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// TestPerKeyOrderHoldsThroughRedeliveryWithIdempotency publishes 20 keys x 60
// messages to 8 workers sharing Middleware(ByHeader) over idempotency.Middleware, and
// closes every connection three times while they run: handled and
// unacknowledged messages come back after later messages of their key were
// handled, and the idempotency claim answers them as duplicates, so the
// handler sees every key's messages once each, in published order. Batches of
// 4 (and of 1 with WARRENMQ_FAULTS_FULL=1).
func TestPerKeyOrderHoldsThroughRedeliveryWithIdempotency(t *testing.T) {
	url := testenv.Disrupt(t)
	batches := []uint16{4}
	if os.Getenv("WARRENMQ_FAULTS_FULL") == "1" {
		batches = append(batches, 1)
	}
	for _, batch := range batches {
		t.Run(fmt.Sprintf("batches of %d", batch), func(t *testing.T) {
			r := runRedelivered(t, url, batch, func(inner messaging.Handler) messaging.Handler {
				return idempotency.Middleware(idempotency.NewMemoryStore(time.Hour), idempotency.Options.Logger(slog.New(slog.DiscardHandler)))(inner)
			})
			t.Logf("%d messages over %d keys: %d first deliveries out of order, %d handled again after a later message of their key; %d came back; %d streams opened",
				r.total, r.keys, r.outOfOrder, r.late, r.cameBack, r.opened)
			if r.outOfOrder != 0 || r.late != 0 {
				t.Fatalf("%d first deliveries out of order and %d messages handled again after a later one of their key; want none", r.outOfOrder, r.late)
			}
			if r.cameBack == 0 {
				t.Errorf("no handled delivery came back after a kill: the kills tested nothing")
			}
			if r.opened < 4 {
				t.Errorf("the consumer opened its stream %d times; three kills must have reconnected it three times", r.opened)
			}
		})
	}
}

// redelivered is what one run found.
type redelivered struct {
	total, keys      int
	outOfOrder, late int // first deliveries out of order; handled again after a later one
	cameBack         int // deliveries handed to a worker again after they had been handled
	opened           int
}

// keyLog follows each key's sequence as handled.
type keyLog struct {
	mu       sync.Mutex
	highest  map[string]int // the highest sequence handled, per key
	seen     map[string]bool
	result   redelivered
	progress chan int // distinct messages handled so far, after each
	// While hold is not nil, a worker that handled the holdFrom-th distinct
	// message or a later one waits on it before it goes on: when the test
	// kills the connections, messages are being handled and handled ones
	// are not yet acknowledged.
	hold     chan struct{}
	holdFrom int
	cameBack atomic.Int64 // deliveries handed to a worker after they had been handled
}

// countCameBack counts the deliveries of a batch that had been handled before.
func (l *keyLog) countCameBack(next messaging.Handler) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		l.mu.Lock()
		for _, m := range messages {
			if l.seen[m.(messaging.Delivery).MessageID] {
				l.cameBack.Add(1)
			}
		}
		l.mu.Unlock()
		next.Handle(ctx, messages...)
	})
}

func (l *keyLog) handle(_ context.Context, messages ...any) {
	for _, message := range messages {
		d := message.(messaging.Delivery)
		key, seq := parse(d.MessageID)
		l.mu.Lock()
		highest, any := l.highest[key]
		switch {
		case l.seen[d.MessageID]:
			if any && seq < highest {
				l.result.late++
			}
		case any && seq != highest+1 || !any && seq != 0:
			l.result.outOfOrder++
		}
		if !any || seq > highest {
			l.highest[key] = seq
		}
		if !l.seen[d.MessageID] {
			l.seen[d.MessageID] = true
			l.progress <- len(l.seen)
		}
		var hold chan struct{}
		if len(l.seen) >= l.holdFrom {
			hold = l.hold
		}
		l.mu.Unlock()
		if hold != nil {
			<-hold
		}
	}
}

// holdAt makes the workers that handle the n-th distinct message and later
// ones wait until letGo.
func (l *keyLog) holdAt(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hold, l.holdFrom = make(chan struct{}), n
}

func (l *keyLog) letGo() {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.hold)
	l.hold = nil
}

func (l *keyLog) waitFor(t *testing.T, ctx context.Context, handled int) {
	t.Helper()
	for {
		select {
		case n := <-l.progress:
			if n >= handled {
				return
			}
		case <-ctx.Done():
			t.Fatalf("fewer than %d messages handled in time", handled)
		}
	}
}

// runRedelivered runs 20 keys x 60 messages through 8 workers sharing one
// ordering handler over guard(the handler), with three kills while they run.
func runRedelivered(t *testing.T, url string, batch uint16, guard messaging.Middleware) redelivered {
	const keyCount, each, workers = 20, 60, 8
	total := keyCount * each
	queue, exchange := testenv.Name(t, "ordering-kills"), testenv.Name(t, "ordering-kills-x")
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })
	l := &keyLog{highest: map[string]int{}, seen: map[string]bool{}, progress: make(chan int, total)}
	handler := l.countCameBack(Middleware(ByHeader("x-order-id"), Options.ArrivalWindow(time.Second), Options.Monitor(testMonitor(t)))(guard(messaging.HandlerFunc(l.handle))))
	handlers := make([]messaging.Handler, workers)
	for i := range handlers {
		handlers[i] = handler
	}
	quiet := slog.New(slog.DiscardHandler)
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	opened := &openings{live: make(chan struct{}, 1)}
	consumer := streaming.New(transport, streaming.Options.Logger(quiet), streaming.Options.Monitor(opened),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(handlers...),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.BatchCapacity(batch),
			streaming.SubscriptionOptions.ReconnectDelay(100*time.Millisecond))))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	<-opened.live // the first opening
	publishKeyed(t, transport, exchange, ids("order-", keyCount), total)
	for _, at := range []int{total / 4, total / 2, 3 * total / 4} {
		l.holdAt(at)
		l.waitFor(t, ctx, at)
		testenv.Rabbitmqctl(t, "close_all_connections", "ordering test disruption")
		l.letGo()
		opened.reopened(t, ctx)
	}
	l.waitFor(t, ctx, total)
	if !emptied(t, url, queue, time.Minute) {
		t.Errorf("%s still held messages a minute after every message was handled", queue)
	}
	if err := consumer.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	<-listening
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.result
	r.total, r.keys, r.opened, r.cameBack = total, keyCount, opened.count(), int(l.cameBack.Load())
	return r
}

// openings counts the consumer's streams opened (one, and one after each
// kill) and signals each on live.
type openings struct {
	streaming.NopMonitor
	mu   sync.Mutex
	n    int
	live chan struct{}
}

func (o *openings) StreamOpened(_ string, err error) {
	if err == nil {
		o.mu.Lock()
		o.n++
		o.mu.Unlock()
		select {
		case o.live <- struct{}{}:
		default:
		}
	}
}

// reopened waits for the stream to open again after a kill.
func (o *openings) reopened(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-o.live:
	case <-ctx.Done():
		t.Fatal("the consumer did not reconnect after the kill")
	}
}

func (o *openings) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// emptied waits, within bound, for queue to hold no ready message: what the
// kills returned has been handled. It polls the real broker's queue depth.
func emptied(t *testing.T, url, queue string, bound time.Duration) bool {
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
	var lookErr error
	empty := testenv.Poll(bound, func() bool {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		lookErr = err
		return err != nil || q.Messages == 0
	})
	if lookErr != nil {
		t.Fatalf("look at %s: %v", queue, lookErr)
	}
	return empty
}
