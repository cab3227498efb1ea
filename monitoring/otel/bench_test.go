package otel

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/warrenmq/messaging"
)

type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// benchTracing samples every span and drops it in the SDK's batching
// processor, as a service exporting them would pay for them.
func benchTracing(b *testing.B) *Tracing {
	provider := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
	b.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	return New(Options.TracerProvider(provider))
}

// BenchmarkHandlerOneMessage is the CPU a traced batch of one costs beyond
// the handler: extraction, the span, the run observer, the decisions read.
func BenchmarkHandlerOneMessage(b *testing.B) {
	handler := benchTracing(b).Handler(messaging.HandlerFunc(func(context.Context, ...any) {}))
	deliveries := []messaging.Delivery{delivery("m1", map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})}
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), deliveries), newFakeSettler())
	b.ReportAllocs()
	for b.Loop() {
		handler.Handle(ctx, "m1")
	}
}

// BenchmarkWriteOneDispatch is the CPU a traced dispatch costs beyond the
// writer: the span, the header copy, the injection.
func BenchmarkWriteOneDispatch(b *testing.B) {
	inner := &fakeConnector{}
	connection, _ := benchTracing(b).Transport(inner).Connect(context.Background())
	writer, _ := connection.Writer(context.Background())
	dispatch := messaging.Dispatch{Topic: "orders", RoutingKey: "eu", MessageID: "m1", Payload: []byte("{}")}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = writer.Write(context.Background(), dispatch)
		inner.written = inner.written[:0]
	}
}
