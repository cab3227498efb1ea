package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/streaming"
)

type shipment struct {
	Order string `json:"order"`
	Stock int    `json:"stock"`
}

// sighting is one delivery a step saw.
type sighting struct {
	id, causation, routeID string
	position               int
}

// ledger counts, by correlation id, what each step saw, and closes done
// when the last step has seen every run.
type ledger struct {
	mu    sync.Mutex
	seen  [3]map[string][]sighting
	runs  map[string]int // fn calls per step and message id, retried runs included
	total int
	done  chan struct{}
}

func newLedger(total int) *ledger {
	l := &ledger{total: total, done: make(chan struct{}), runs: map[string]int{}}
	for i := range l.seen {
		l.seen[i] = map[string][]sighting{}
	}
	return l
}

// saw records d at step and reports whether this is its first run.
func (l *ledger) saw(step int, d messaging.Delivery) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := fmt.Sprint(step, d.MessageID)
	l.runs[key]++
	if l.runs[key] > 1 {
		return false // the same delivery run again: not a new sighting
	}
	l.seen[step][d.CorrelationID] = append(l.seen[step][d.CorrelationID], sighting{d.MessageID, d.CausationID, d.RouteID, d.RoutePosition})
	if step == 2 && len(l.seen[2]) == l.total {
		close(l.done)
	}
	return true
}

// runPipeline sends total orders through validate -> reserve -> dispatch on
// transport and checks every run by its correlation id: each step saw it
// once, the causation chains from the sent message through each hop, the
// run id and position travel with it. The middle step takes batches of 16
// and fails every 100th message with an outage on its first run, so retry
// runs its batch again: no hop may be published twice.
func runPipeline(t *testing.T, transport messaging.Connector, name string, total int) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	book := newLedger(total)
	monitor := &fakeMonitor{}
	fast := retrypolicy.Fixed(5, 10*time.Millisecond)
	var outages sync.Map
	gate := make(chan struct{}) // the middle step waits for every send, so its batches fill
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := NewPipeline[order](ctx, transport, name,
		Step("validate", func(ctx context.Context, d messaging.Delivery, in order) (order, bool, error) {
			book.saw(0, d)
			return in, true, nil
		}, StepOptions.Retry(fast), StepOptions.Consumers(4),
			StepOptions.Subscription(streaming.SubscriptionOptions.BatchCapacity(16))),
		Step("reserve", func(ctx context.Context, d messaging.Delivery, in order) (reservation, bool, error) {
			select {
			case <-gate:
			case <-ctx.Done():
				return reservation{}, false, ctx.Err()
			}
			book.saw(1, d)
			var n int
			fmt.Sscanf(d.CorrelationID, "c-%d", &n)
			if n%100 == 7 {
				if _, again := outages.LoadOrStore(d.MessageID, true); !again {
					return reservation{}, false, messaging.Outage(errors.New("stock service away"))
				}
			}
			return reservation{Order: in.ID}, true, nil
		}, StepOptions.Retry(fast), StepOptions.Consumers(4),
			StepOptions.Subscription(streaming.SubscriptionOptions.BatchCapacity(16))),
		Step("dispatch", func(ctx context.Context, d messaging.Delivery, in reservation) (shipment, bool, error) {
			book.saw(2, d)
			return shipment{Order: in.Order}, true, nil
		}, StepOptions.Retry(fast)),
		Options.Monitor(monitor), Options.Logger(quiet),
	)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	closePipeline := func() {
		if !closed {
			closed = true
			if err := p.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	}
	defer closePipeline()

	started := time.Now()
	runIDs := make([]string, total)
	var sending sync.WaitGroup
	sendErrs := make(chan error, total)
	const senders = 16
	for sender := range senders {
		sending.Go(func() {
			for i := sender; i < total; i += senders {
				id := fmt.Sprint("c-", i)
				runID, err := p.SendWith(ctx, order{ID: fmt.Sprint("o-", i), Total: i}, messaging.Dispatch{MessageID: "m-" + id, CorrelationID: id})
				if err != nil {
					sendErrs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
				runIDs[i] = runID
			}
		})
	}
	sending.Wait()
	close(sendErrs)
	for err := range sendErrs {
		t.Fatal(err)
	}
	sent := time.Since(started)
	close(gate)
	select {
	case <-book.done:
	case <-ctx.Done():
		book.mu.Lock()
		t.Fatalf("after %s the steps saw %d, %d and %d of %d runs", time.Since(started).Round(time.Millisecond), len(book.seen[0]), len(book.seen[1]), len(book.seen[2]), total)
		book.mu.Unlock()
	}
	elapsed := time.Since(started)
	closing := time.Now()
	closePipeline() // every worker has finished: the counts are final
	t.Logf("Close took %s", time.Since(closing).Round(time.Millisecond))

	book.mu.Lock()
	defer book.mu.Unlock()
	rerun := 0
	for key, n := range book.runs {
		if strings.HasPrefix(key, "1") && n > 1 {
			rerun++
		}
	}
	t.Logf("%d runs sent in %s, through 3 steps in %s; %d middle-step messages run more than once by retry; %d hops published, %d runs completed",
		total, sent.Round(time.Millisecond), elapsed.Round(time.Millisecond), rerun, monitor.count("forwarded"), monitor.count("run_completed"))
	for i := range total {
		id := fmt.Sprint("c-", i)
		var chain [3]sighting
		for step := range 3 {
			seen := book.seen[step][id]
			if len(seen) != 1 {
				t.Fatalf("run %s was seen %d times at step %d; want once", id, len(seen), step)
			}
			chain[step] = seen[0]
			if seen[0].routeID != runIDs[i] || seen[0].position != step {
				t.Fatalf("run %s at step %d carried run id %q position %d; want %q, %d", id, step, seen[0].routeID, seen[0].position, runIDs[i], step)
			}
		}
		if chain[0].id != "m-"+id || chain[0].causation != "" {
			t.Fatalf("run %s entered as %+v; want the sent message m-%s with no cause", id, chain[0], id)
		}
		if chain[1].causation != chain[0].id || chain[2].causation != chain[1].id {
			t.Fatalf("run %s: causation not chained: %+v", id, chain)
		}
	}
	if len(book.seen[1]) != total || rerun <= total/100 {
		t.Fatalf("the middle step saw %d runs and ran %d of them again; want %d, and more than the %d that failed (their batch-mates)", len(book.seen[1]), rerun, total, total/100)
	}
	if got := monitor.count("forwarded"); got != 2*total {
		t.Fatalf("%d hops published; want %d (two per run, none twice)", got, 2*total)
	}
	if got := monitor.count("run_completed"); got != total {
		t.Fatalf("%d runs reported completed; want %d", got, total)
	}
}

func TestAThreeStepPipelineCarriesAThousandRunsOnMemory(t *testing.T) {
	broker := memory.New()
	defer broker.Close()
	runPipeline(t, broker, "fulfilment", 1000)
}

func TestAThreeStepPipelineCarriesAThousandRunsOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() }) // after the topology is deleted
	name := testenv.Name(t, "pipeline")
	t.Cleanup(func() {
		start := time.Now()
		deleteTopology(t, transport, name, "validate", "reserve", "dispatch")
		t.Logf("cleanup took %s", time.Since(start).Round(time.Millisecond))
	})
	runPipeline(t, transport, name, 1000)
}

// deleteTopology deletes a route's exchange and every step's queues.
func deleteTopology(t *testing.T, transport messaging.Connector, name string, steps ...string) {
	route := NewRoute(name, steps...)
	queues := make([]string, len(steps))
	for i, step := range steps {
		queues[i] = route.QueueFor(step)
	}
	cleanUp(t, transport, name, queues...)
}

// cleanUp deletes each queue with its .dlq and .parked, then exchange
// unless it is empty.
func cleanUp(t *testing.T, transport messaging.Connector, exchange string, queues ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		return
	}
	for _, q := range queues {
		for _, suffix := range []string{"", ".dlq", ".parked"} {
			if err := declarer.DeleteQueue(ctx, q+suffix); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
	}
	if exchange != "" {
		if err := declarer.DeleteExchange(ctx, exchange); err != nil {
			t.Logf("cleanup: %v", err)
		}
	}
}

// hopIntoNowhere deletes a pipeline's second queue and sends one run: the
// first step's hop is unroutable, so the input is retried through the
// step's policy and, when it gives up, dead-lettered to {name}.validate.dlq.
func hopIntoNowhere(t *testing.T, transport messaging.Connector, name string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	monitor := &fakeMonitor{}
	var mu sync.Mutex
	attempts := 0
	p, err := NewPipeline[order](ctx, transport, name,
		Step("validate", func(ctx context.Context, d messaging.Delivery, in order) (order, bool, error) {
			mu.Lock()
			attempts++
			mu.Unlock()
			return in, true, nil
		}, StepOptions.Retry(retrypolicy.Fixed(2, 10*time.Millisecond))),
		Step("reserve", func(ctx context.Context, d messaging.Delivery, in order) (order, bool, error) { return in, true, nil }),
		Options.Monitor(monitor), Options.Logger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	// The step's consumer holds the queue; a deleted queue with a consumer
	// is gone for routing at once.
	if err := declarer.DeleteQueue(ctx, p.Route().QueueFor("reserve")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, order{ID: "o-1"}); err != nil {
		t.Fatal(err)
	}
	dlq := p.Route().QueueFor("validate") + ".dlq"
	for {
		state, err := declarer.InspectQueue(ctx, dlq)
		if err != nil {
			t.Fatal(err)
		}
		if state.Messages == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s holds %d messages; want 1", dlq, state.Messages)
		case <-time.After(20 * time.Millisecond): // polling the broker
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts != 2 || monitor.count("forward_failed") != 2 || monitor.count("forwarded") != 0 {
		t.Fatalf("the step ran %d times, %d forwards failed, %d went out; want 2, 2, 0", attempts, monitor.count("forward_failed"), monitor.count("forwarded"))
	}
}

func TestAHopIntoNowhereIsRetriedThenDeadLetteredOnMemory(t *testing.T) {
	broker := memory.New()
	defer broker.Close()
	hopIntoNowhere(t, broker, "nowhere")
}

func TestAHopIntoNowhereIsRetriedThenDeadLetteredOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	name := testenv.Name(t, "nowhere")
	t.Cleanup(func() { deleteTopology(t, transport, name, "validate", "reserve") })
	hopIntoNowhere(t, transport, name)
}
