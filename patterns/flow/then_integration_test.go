package flow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// thenOnce runs Then under a serialization stack (the handler gets decoded
// orders, their envelopes in the context) in batches of 8, with retry
// outside it; every 20th order fails with an outage on its first run, so
// its batch runs again. Each order's invoice reaches the invoices queue
// exactly once, counted by the order's id, with the correlation kept and
// the order as its cause.
func thenOnce(t *testing.T, transport messaging.Connector, prefix string, total int) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ordersQueue, invoicesQueue := prefix+"orders", prefix+"invoices"
	encoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"order": reflect.TypeFor[order](), "invoice": reflect.TypeFor[invoice]()}),
		serialization.Options.Logger(quiet))
	writer := batch.New(transport)
	defer writer.Close()

	var mu sync.Mutex
	var outages sync.Map
	runs := 0
	invoices := map[string][]messaging.Delivery{} // by the order's id (the cause)
	done := make(chan struct{})
	monitor := &fakeMonitor{}
	invoicing := retry.New(Then(writer, Address{RoutingKey: invoicesQueue},
		func(ctx context.Context, d messaging.Delivery, o order) (invoice, bool, error) {
			mu.Lock()
			runs++
			mu.Unlock()
			if o.Total%20 == 3 {
				if _, again := outages.LoadOrStore(d.MessageID, true); !again {
					return invoice{}, false, messaging.Outage(errors.New("ledger away"))
				}
			}
			return invoice{Order: o.ID, Due: o.Total}, true, nil
		}, Options.MessageType("invoice"), Options.Monitor(monitor)),
		retry.Options.Backoff(time.Millisecond), retry.Options.MaxOutageBackoff(5*time.Millisecond), retry.Options.Logger(quiet))
	counting := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, d := range messaging.DeliveriesFrom(ctx) {
			invoices[d.CausationID] = append(invoices[d.CausationID], d)
			if len(invoices) == total && d.CausationID != "" {
				select {
				case <-done:
				default:
					close(done)
				}
			}
		}
	})
	consumer := streaming.New(encoded, streaming.Options.Logger(quiet), streaming.Options.Subscriptions(
		streaming.NewSubscription(ordersQueue, streaming.SubscriptionOptions.AddWorkers(invoicing), streaming.SubscriptionOptions.BatchCapacity(8)),
		streaming.NewSubscription(invoicesQueue, streaming.SubscriptionOptions.AddWorkers(counting), streaming.SubscriptionOptions.BatchCapacity(8)),
	))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	defer func() { _ = consumer.Close(); <-listening }()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	// Every order is sent before the consumer can keep up, so its batches fill.
	dispatches := make([]messaging.Dispatch, total)
	for i := range total {
		dispatches[i] = messaging.Dispatch{RoutingKey: ordersQueue, MessageID: fmt.Sprint("order-", i), CorrelationID: fmt.Sprint("c-", i),
			MessageType: "order", ContentType: "application/json", Mandatory: true, Payload: fmt.Appendf(nil, `{"id":"o-%d","total":%d}`, i, i)}
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d of %d invoices arrived", len(invoices), total)
	}
	_ = consumer.Close()
	<-listening

	mu.Lock()
	defer mu.Unlock()
	for i := range total {
		got := invoices[fmt.Sprint("order-", i)]
		if len(got) != 1 {
			t.Fatalf("order %d has %d invoices; want 1", i, len(got))
		}
		if got[0].CorrelationID != fmt.Sprint("c-", i) || got[0].Message != (invoice{Order: fmt.Sprint("o-", i), Due: i}) {
			t.Fatalf("order %d's invoice: correlation %q, message %+v", i, got[0].CorrelationID, got[0].Message)
		}
	}
	if runs <= total+total/20 || monitor.count("forwarded") != total {
		t.Fatalf("%d runs, %d hops; want more than %d runs (batches run again) and %d hops", runs, monitor.count("forwarded"), total+total/20, total)
	}
	t.Logf("%d orders invoiced once each in %d runs of the step", total, runs)
}

func TestThenPublishesEachHopOnceOnMemory(t *testing.T) {
	broker := memory.New()
	defer broker.Close()
	thenOnce(t, broker, "then-", 400)
}

func TestThenPublishesEachHopOnceOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	prefix := testenv.Name(t, "then") + "-"
	t.Cleanup(func() {
		cleanUp(t, transport, "", prefix+"orders", prefix+"invoices")
	})
	thenOnce(t, transport, prefix, 400)
}

// slipIntoNowhere: a slip's next stop is an exchange nothing is bound to;
// with no retries the message ends in its queue's .dlq.
func slipIntoNowhere(t *testing.T, transport messaging.Connector, queue string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	writer := batch.New(transport)
	defer writer.Close()
	step := FollowSlip(writer, func(ctx context.Context, d messaging.Delivery, o order) (order, error) { return o, nil })
	consumer := streaming.New(transport, streaming.Options.Logger(quiet), streaming.Options.Subscriptions(
		streaming.NewSubscription(queue, streaming.SubscriptionOptions.AddWorkers(step),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(retrypolicy.None()))))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	defer func() { _ = consumer.Close(); <-listening }()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	slip := NewRoutingSlip().Then("", queue, "here").Then("", queue+"-nowhere", "nowhere")
	if err := Start(ctx, writer, slip, messaging.Dispatch{MessageID: "lost-1", Payload: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	declarer, _ := messaging.As[messaging.Declarer](conn)
	for {
		state, err := declarer.InspectQueue(ctx, queue+".dlq")
		if err == nil && state.Messages == 1 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s.dlq holds %d messages (%v); want 1", queue, state.Messages, err)
		case <-time.After(20 * time.Millisecond): // polling the broker
		}
	}
}

func TestASlipHopIntoNowhereIsDeadLetteredOnMemory(t *testing.T) {
	broker := memory.New()
	defer broker.Close()
	slipIntoNowhere(t, broker, "slip-nowhere")
}

func TestASlipHopIntoNowhereIsDeadLetteredOnRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	queue := testenv.Name(t, "slip-nowhere")
	t.Cleanup(func() { cleanUp(t, transport, "", queue) })
	slipIntoNowhere(t, transport, queue)
}
