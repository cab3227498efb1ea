package main

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/monitoring/otel"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// tracingScenario: what monitoring/otel costs. Publishing (the batch writer,
// 100 dispatches a write) and consuming (streaming + serialization + retry,
// default capacities) each run without tracing and with it: every message
// sampled, its span exported to an exporter that drops it, through the SDK's
// batching processor as a service would run it. The ratio is traced over
// untraced in the same run; the target is 0.90 or more (tracing costs at most
// a tenth of the throughput).
func tracingScenario(s settings) scenario {
	body := make([]byte, s.size)
	decoded, _ := json.Marshal(benchMessage{Data: strings.Repeat("x", max(0, s.size-12))})
	limit := time.Minute
	return scenario{name: "tracing", allocs: true, sides: []side{
		{name: "publish", run: func(ctx context.Context, queue string) (measurement, error) {
			return publishTraced(ctx, s, queue, body, false)
		}},
		{name: "publish+trace", baseline: "publish", run: func(ctx context.Context, queue string) (measurement, error) {
			return publishTraced(ctx, s, queue, body, true)
		}},
		{name: "consume", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTraced(ctx, s, queue, decoded, limit, false)
		}},
		{name: "consume+trace", baseline: "consume", run: func(ctx context.Context, queue string) (measurement, error) {
			return consumeTraced(ctx, s, queue, decoded, limit, true)
		}},
	}, report: func(totals []measurement) {
		cost := func(plain, traced measurement) float64 {
			if plain.rate() == 0 {
				return 0
			}
			return 100 * (1 - traced.rate()/plain.rate())
		}
		fmt.Printf("# tracing cost: publish %.1f%%, consume %.1f%% of throughput (target: at most 10%% of either)\n",
			cost(totals[0], totals[1]), cost(totals[2], totals[3]))
	}}
}

// benchTracing returns a Tracing whose every span is sampled and exported to
// nowhere, and how to shut its provider down.
func benchTracing() (*otel.Tracing, func()) {
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(discardSpans{}),
	)
	return otel.New(otel.Options.TracerProvider(provider)), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = provider.Shutdown(ctx)
	}
}

// discardSpans is a span exporter that drops what it is given.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

func publishTraced(ctx context.Context, s settings, queue string, body []byte, traced bool) (measurement, error) {
	var transport messaging.Connector = rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
	defer transport.Close()
	if traced {
		tracing, shutdown := benchTracing()
		defer shutdown()
		transport = tracing.Transport(transport)
	}
	writer := batch.New(transport)
	defer writer.Close()
	dispatches := make([]messaging.Dispatch, 100)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
	}
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	total := 0
	for time.Now().Before(deadline) {
		n, err := writer.Write(ctx, dispatches...)
		total += n
		if err != nil {
			return watch.stop(total), err
		}
	}
	return watch.stop(total), nil
}

func consumeTraced(ctx context.Context, s settings, queue string, body []byte, limit time.Duration, traced bool) (measurement, error) {
	if err := preload(ctx, s, queue, body); err != nil {
		return measurement{}, err
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url))
	defer transport.Close()
	decoded := serialization.New(transport,
		serialization.Options.ReadTypes(map[string]reflect.Type{"bench": reflect.TypeOf(benchMessage{})}))
	var handled atomic.Int64
	done := make(chan struct{})
	want := int64(s.messages)
	var handler messaging.Handler = retry.New(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		if handled.Add(int64(len(messages))) >= want {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	}))
	if traced {
		tracing, shutdown := benchTracing()
		defer shutdown()
		handler = tracing.Handler(handler)
	}
	consumer := streaming.New(decoded, streaming.Options.Subscriptions(streaming.NewSubscription(queue,
		streaming.SubscriptionOptions.AddWorkers(handler),
		streaming.SubscriptionOptions.EstablishTopology(false),
		streaming.SubscriptionOptions.DeadLetters(false),
	)))
	watch := startWatch()
	go consumer.Listen()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
	m := watch.stop(int(handled.Load()))
	_ = consumer.Close()
	if m.msgs < s.messages {
		return m, fmt.Errorf("consumed %d of %d within %s; is the broker under a memory alarm or another consumer on the queue?", m.msgs, s.messages, limit)
	}
	return m, nil
}
