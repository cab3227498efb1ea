package otel

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/streaming"
)

// TestMalformedTraceContextsAreHandledUnderFreshTraces publishes, with the
// raw client, messages whose traceparent is malformed, of another type, or
// well formed, to a queue a traced consumer reads: every message is handled
// once, acknowledged (the queue ends empty), and only the well-formed one
// continues its trace.
func TestMalformedTraceContextsAreHandledUnderFreshTraces(t *testing.T) {
	url := testenv.Broker(t)
	queue := testenv.Name(t, "otel-malformed")
	t.Cleanup(func() { testenv.DeleteTopology(url, nil, queue, queue+".dlq", queue+".parked") })
	valid := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	headers := map[string]amqp.Table{
		"garbage":    {"traceparent": "00-garbage-01"},
		"zero-trace": {"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"},
		"number":     {"traceparent": int64(42)},
		"bytes":      {"traceparent": []byte{0xff, 0x00}},
		"bad-state":  {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333-01", "tracestate": "=,,=\x00"},
		"valid":      {"traceparent": valid},
	}

	rec := newRecorder()
	tracing := New(Options.TracerProvider(rec.provider))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	var mu sync.Mutex
	handled := map[string]int{}
	all := make(chan struct{})
	worker := tracing.Handler(messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, message := range messages {
			handled[message.(messaging.Delivery).MessageID]++
		}
		if len(handled) == len(headers) {
			select {
			case <-all:
			default:
				close(all)
			}
		}
	}))
	consumer := streaming.New(transport, streaming.Options.Logger(quiet), streaming.Options.Subscriptions(
		streaming.NewSubscription(queue, streaming.SubscriptionOptions.AddWorkers(worker),
			streaming.SubscriptionOptions.BatchCapacity(1), streaming.SubscriptionOptions.FullDeliveryToHandler(true))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := run(t, consumer.Listen, consumer)
	defer stop()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for id, table := range headers {
		confirm, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false,
			amqp.Publishing{MessageId: id, Headers: table, Body: []byte("{}")})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := confirm.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish %s: confirmed %v, %v", id, ok, err)
		}
	}
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatalf("handled %v within 30 s; want each of %d once", handled, len(headers))
	}
	stop()

	mu.Lock()
	for id := range headers {
		if handled[id] != 1 {
			t.Errorf("%s handled %d times; want once", id, handled[id])
		}
	}
	mu.Unlock()
	spans := rec.named(queue + " process")
	if len(spans) != len(headers) {
		t.Fatalf("%d process spans; want %d", len(spans), len(headers))
	}
	for _, span := range spans {
		id := attributes(span.Attributes)["messaging.message.id"]
		switch {
		case !span.SpanContext.IsValid():
			t.Errorf("%s: the process span has no valid context", id)
		case id == "valid" && traceparent(span.Parent) != valid:
			t.Errorf("the well-formed message's span has parent %s; want %s", traceparent(span.Parent), valid)
		case id != "valid" && span.Parent.IsValid():
			t.Errorf("%s: a malformed trace context became the parent %s", id, traceparent(span.Parent))
		}
	}
	inspect, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if inspect.Messages != 0 {
		t.Errorf("%d messages left in the queue; want all acknowledged", inspect.Messages)
	}
}
