package otel

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
)

// FuzzHandlerExtract hands one delivery with arbitrary traceparent and
// tracestate values to Handler: the handler runs exactly once, one span
// ends, and its parent is the header's trace context only when that parses
// as one.
func FuzzHandlerExtract(f *testing.F) {
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "rojo=00f067aa0ba902b7")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", "")
	f.Add("00-00000000000000000000000000000000-b7ad6b7169203331-01", "")
	f.Add("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "")
	f.Add("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	f.Add("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra", "a=b,c=d")
	f.Add("00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01", "")
	f.Add("", "=,=,=")
	f.Add("\x00\xff-\n", strings.Repeat("k=v,", 100))
	f.Fuzz(func(t *testing.T, parent, state string) {
		rec := newRecorder()
		tracing := New(Options.TracerProvider(rec.provider))
		calls := 0
		var inside trace.SpanContext
		inner := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
			calls++
			inside = trace.SpanContextFromContext(ctx)
		})
		headers := map[string]any{"traceparent": parent, "tracestate": state}
		ctx := messaging.WithDeliveries(context.Background(), []messaging.Delivery{{MessageID: "m", SourceQueue: "q", Headers: headers}})
		tracing.Handler(inner).Handle(ctx, "m")

		if calls != 1 {
			t.Fatalf("the handler ran %d times", calls)
		}
		spans := rec.spans()
		if len(spans) != 1 {
			t.Fatalf("%d spans ended, want 1", len(spans))
		}
		if !inside.IsValid() || inside.SpanID() != spans[0].SpanContext.SpanID() {
			t.Fatalf("the handler did not run under the process span")
		}
		remote := tracing.remote(headers)
		if remote.IsValid() {
			if spans[0].Parent.SpanID() != remote.SpanID() || spans[0].SpanContext.TraceID() != remote.TraceID() {
				t.Fatalf("a parsed trace context %v is not the parent %v", remote, spans[0].Parent)
			}
		} else if spans[0].Parent.IsValid() {
			t.Fatalf("no trace context parsed from %q, but the span has parent %v", parent, spans[0].Parent)
		}
	})
}
