package otel

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/streaming"
)

// TestSettlementsOnTheBrokerAreEventsOfTheirTrace runs Handler under the
// streaming runtime's own settlement on the local RabbitMQ, its republishes
// through Transport: a parked message, a rejected one and one retried once
// each write their event on their process span; the set-aside copies land in
// {queue}.parked and {queue}.dlq (counted); the retried copy's publish is the
// child of the first process span, and the second process span (attempt 2)
// its child, in the trace the message started in.
func TestSettlementsOnTheBrokerAreEventsOfTheirTrace(t *testing.T) {
	began := time.Now()
	url := testenv.Broker(t)
	t.Logf("the broker lock took %s", time.Since(began).Round(time.Millisecond))
	queue := testenv.Name(t, "otel-settle")
	t.Cleanup(func() { testenv.DeleteTopology(url, nil, queue, queue+".dlq", queue+".parked") })

	rec := newRecorder()
	tracing := New(Options.TracerProvider(rec.provider))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := tracing.Transport(rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet)))
	defer transport.Close()

	var mu sync.Mutex
	runs := map[string]int{}
	finished := make(chan struct{})
	worker := tracing.Handler(messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, message := range messages {
			d := message.(messaging.Delivery)
			runs[d.MessageID]++
			var err error
			switch {
			case d.MessageID == "park":
				err = messaging.Park(ctx, d, errors.New("cannot read it"))
			case d.MessageID == "reject":
				err = messaging.Reject(ctx, d, errors.New("never valid"))
			case d.MessageID == "retry" && d.Attempt == 1:
				err = messaging.Retry(ctx, d, errors.New("not yet"))
			case d.MessageID == "retry":
				close(finished)
			}
			if err != nil {
				panic(err)
			}
		}
	}))
	consumer := streaming.New(transport, streaming.Options.Logger(quiet), streaming.Options.Subscriptions(
		streaming.NewSubscription(queue, streaming.SubscriptionOptions.AddWorkers(worker),
			streaming.SubscriptionOptions.BatchCapacity(1), streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(retrypolicy.Fixed(3, 10*time.Millisecond)))))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop := run(t, consumer.Listen, consumer)
	defer stop()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	requestCtx, request := rec.provider.Tracer("test").Start(ctx, "request")
	connection, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer connection.Close()
	writer, err := connection.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	for _, id := range []string{"park", "reject", "retry"} {
		if _, err := writer.Write(requestCtx, messaging.Dispatch{RoutingKey: queue, MessageID: id, Mandatory: true, Payload: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	request.End()
	written := time.Now()
	select {
	case <-finished:
	case <-ctx.Done():
		t.Fatalf("the retried message did not come back within 30 s: %v", runs)
	}
	t.Logf("the retried copy came back %s after the writes", time.Since(written).Round(time.Millisecond))
	stop()
	t.Logf("stopped at %s", time.Since(began).Round(time.Millisecond))

	mu.Lock()
	if runs["park"] != 1 || runs["reject"] != 1 || runs["retry"] != 2 {
		t.Errorf("runs %v; want park 1, reject 1, retry 2", runs)
	}
	mu.Unlock()
	for set, want := range map[string]int{queue + ".parked": 1, queue + ".dlq": 1, queue: 0} {
		if got := depth(t, url, set); got != want {
			t.Errorf("%s holds %d messages; want %d", set, got, want)
		}
	}

	processes := rec.named(queue + " process")
	if len(processes) != 4 {
		t.Fatalf("%d process spans; want 4", len(processes))
	}
	byEvent := map[string]tracetest.SpanStub{}
	var second tracetest.SpanStub
	for _, span := range processes {
		if span.SpanContext.TraceID() != request.SpanContext().TraceID() {
			t.Errorf("%s: not in the request's trace", attributes(span.Attributes)["messaging.message.id"])
		}
		for _, event := range span.Events {
			byEvent[event.Name] = span
		}
		if len(span.Events) == 0 {
			second = span
		}
	}
	if span, ok := byEvent["message.parked"]; !ok || span.Status.Code == codes.Error {
		t.Errorf("no message.parked event, or the parked message's span is an error: %+v", span.Status)
	}
	if span, ok := byEvent["message.dead_lettered"]; !ok || span.Status.Code != codes.Error {
		t.Errorf("no message.dead_lettered event, or its span is not an error: %+v", span.Status)
	}
	first, ok := byEvent["message.retried"]
	if !ok {
		t.Fatal("no message.retried event")
	}
	if attributes(second.Attributes)["messaging.acemq.attempt"] != int64(2) {
		t.Fatalf("the span with no event is attempt %v; want the retried copy (2)", attributes(second.Attributes)["messaging.acemq.attempt"])
	}
	copyPublish, ok := spanByID(rec.spans(), second.Parent.SpanID().String())
	if !ok || copyPublish.Parent.SpanID() != first.SpanContext.SpanID() {
		t.Errorf("the retried copy's process span is not the child of a publish under the first process span: parent %q", copyPublish.Name)
	}
}

func spanByID(spans tracetest.SpanStubs, id string) (tracetest.SpanStub, bool) {
	for _, span := range spans {
		if span.SpanContext.SpanID().String() == id {
			return span, true
		}
	}
	return tracetest.SpanStub{}, false
}

func depth(t *testing.T, url, queue string) int {
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
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}
