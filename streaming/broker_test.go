package streaming

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return quietLogger()
}

// decodedTransport is the consuming stack's bottom: rabbitmq wrapped in
// serialization.
func decodedTransport(t *testing.T, url string) messaging.Connector {
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quietLogger()))
	t.Cleanup(func() { _ = transport.Close() })
	return serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"order": reflect.TypeOf(order{})}),
		serialization.Options.Logger(quietLogger()))
}

// countingHandler counts full deliveries by id and checks they decoded.
func countingHandler(t *testing.T, counts *tally, handled *atomic.Int64) messaging.Handler {
	return messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		for _, message := range messages {
			delivery := message.(messaging.Delivery)
			if _, ok := delivery.Message.(order); !ok {
				t.Errorf("delivery %s did not decode: %v", delivery.MessageID, delivery.Undecodable)
			}
			counts.add(delivery.MessageID)
			if handled != nil {
				handled.Add(1)
			}
		}
	})
}

func consume(t *testing.T, connector messaging.Connector, queue string, handler messaging.Handler, options ...SubscriptionOption) messaging.ListenCloser {
	t.Helper()
	workers := SubscriptionOptions.AddWorkers(handler, handler, handler)
	consumer := New(connector, Options.Logger(testLogger(t)), Options.Subscriptions(NewSubscription(queue, append([]SubscriptionOption{
		workers,
		SubscriptionOptions.BufferCapacity(256),
		SubscriptionOptions.BatchCapacity(64),
		SubscriptionOptions.FullDeliveryToHandler(true),
		SubscriptionOptions.ReconnectDelay(50 * time.Millisecond),
	}, options...)...)))
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		consumer.Listen()
	}()
	t.Cleanup(func() {
		_ = consumer.Close()
		receiveWithin(t, listened, 30*time.Second, "the consumer's Listen to return after Close")
	})
	return consumer
}

func TestBrokerTwentyThousandMessagesEachHandled(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "stream-20k")
	tool := newBrokerTool(t, url)
	tool.declare(url, queue)
	ids := tool.publishOrders(queue, "m", 20000)

	counts := newTally(len(ids))
	handler := retry.New(countingHandler(t, counts, nil),
		retry.Options.Backoff(10*time.Millisecond), retry.Options.Logger(quietLogger()))
	consumer := consume(t, decodedTransport(t, url), queue, handler)
	counts.wait(t, 40*time.Second)
	if err := consumer.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if missing := counts.missing(ids); len(missing) > 0 {
		t.Fatalf("%d messages never handled, e.g. %v", len(missing), missing[:1])
	}
	if depth := tool.depth(queue); depth != 0 {
		t.Fatalf("queue holds %d messages after consuming; every one should have been acknowledged", depth)
	}
}

func TestBrokerNoMessageLostWhileConnectionsAreClosedEverySecond(t *testing.T) {
	url := testenv.Disrupt(t)
	queue := testenv.Name(t, "stream-chaos")
	tool := newBrokerTool(t, url)
	tool.declare(url, queue)
	ids := tool.publishOrders(queue, "c", 20000)

	counts := newTally(len(ids))
	var handled atomic.Int64
	// Consuming must span several disruptions instead of finishing before the
	// second one: each fifth of the messages is handled only after one more
	// disruption happened (or 5 s passed without one).
	var disruptions atomic.Int64
	var disrupted atomic.Pointer[chan struct{}] // closed, and replaced, at each disruption
	first := make(chan struct{})
	disrupted.Store(&first)
	fifth := int64(len(ids) / 5)
	counting := countingHandler(t, counts, &handled)
	working := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		if next := *disrupted.Load(); handled.Load() >= (disruptions.Load()+1)*fifth {
			select {
			case <-next:
			case <-time.After(5 * time.Second):
			}
		}
		counting.Handle(ctx, messages...)
	})
	consumer := consume(t, decodedTransport(t, url), queue, working)

	stop := make(chan struct{})
	var disruptor sync.WaitGroup
	disruptor.Go(func() {
		ticker := time.NewTicker(time.Second)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := exec.CommandContext(ctx, "rabbitmqctl", "close_all_connections", "chaos test").CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("rabbitmqctl close_all_connections: %v\n%s", err, out)
				return
			}
			disruptions.Add(1)
			next := make(chan struct{})
			close(*disrupted.Swap(&next))
		}
	})
	select {
	case <-counts.full:
	case <-time.After(50 * time.Second):
	}
	close(stop)
	disruptor.Wait()
	counts.wait(t, 10*time.Second) // consumption resumes once the disruptions stop
	// A disruption just before the last one may have returned handled but
	// unacknowledged copies to the queue: the consumer, still running,
	// handles them again. Wait for it to empty the queue before closing.
	tool.reopen(url)
	var depth int
	testenv.Poll(30*time.Second, func() bool {
		depth = tool.depth(queue)
		return depth == 0
	})
	if err := consumer.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("%d disruptions; %d deliveries handled for %d messages", disruptions.Load(), handled.Load(), len(ids))
	if disruptions.Load() < 2 {
		t.Fatalf("only %d disruption(s) happened; the test did not test reconnection", disruptions.Load())
	}
	if missing := counts.missing(ids); len(missing) > 0 {
		t.Fatalf("%d messages lost, e.g. %v", len(missing), missing[:1])
	}
	if depth != 0 {
		t.Fatalf("queue still holds %d messages 30 s after the disruptions stopped, with the consumer running", depth)
	}
}

func TestBrokerGracefulShutdownUnderLoadLosesNothing(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "stream-shutdown")
	tool := newBrokerTool(t, url)
	tool.declare(url, queue)
	ids := tool.publishOrders(queue, "s", 5000)
	connector := decodedTransport(t, url)
	all := newTally(len(ids))

	for _, strategy := range []Strategy{ShutdownStrategyDrain, ShutdownStrategyCurrentBatch, ShutdownStrategyImmediate} {
		phase := newTally(1000)
		var handled atomic.Int64
		slow := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			countingHandler(t, phase, &handled).Handle(ctx, messages...)
			countingHandler(t, all, nil).Handle(ctx, messages...)
			select { // a handler with real work to do, that honours cancellation
			case <-time.After(2 * time.Millisecond):
			case <-ctx.Done():
			}
		})
		consumer := consume(t, connector, queue, slow, SubscriptionOptions.ShutdownStrategy(strategy, 5*time.Second))
		phase.wait(t, 20*time.Second)
		if err := consumer.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		t.Logf("%s: the consumer handled %d deliveries before it was closed", strategy, handled.Load())
	}
	if all.distinct() == len(ids) {
		t.Fatalf("the consumers closed under load handled everything; the test did not exercise redelivery")
	}

	last := newTally(1)
	consumer := consume(t, connector, queue, messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		countingHandler(t, last, nil).Handle(ctx, messages...)
		countingHandler(t, all, nil).Handle(ctx, messages...)
	}))
	all.wait(t, 20*time.Second)
	if err := consumer.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if missing := all.missing(ids); len(missing) > 0 {
		t.Fatalf("%d messages lost, e.g. %v", len(missing), missing[:1])
	}
	if depth := tool.depth(queue); depth != 0 {
		t.Fatalf("queue still holds %d messages after every id was handled: some were not acknowledged", depth)
	}
}
