package otel

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// attributes maps a span's attributes by key, values as Go values.
func attributes(kvs []attribute.KeyValue) map[string]any {
	values := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		values[string(kv.Key)] = kv.Value.AsInterface()
	}
	return values
}

// traceparent is the W3C header value of a span context.
func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
