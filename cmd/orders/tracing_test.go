package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/monitoring/otel"
)

func TestTracingOffLeavesEveryPartAsItWas(t *testing.T) {
	tracing, err := startTracing(context.Background(), "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer tracing.stop()
	handler := messaging.HandlerFunc(func(context.Context, ...any) {})
	routes := http.NewServeMux()
	if tracing.transport(nil) != nil || tracing.outbox(nil) != nil {
		t.Error("an off tracer wrapped a connector")
	}
	if _, wrapped := tracing.handler(handler).(messaging.HandlerFunc); !wrapped {
		t.Error("an off tracer wrapped a handler")
	}
	if tracing.http(routes) != http.Handler(routes) {
		t.Error("an off tracer wrapped the HTTP routes")
	}
}

func TestTracingRefusesAnUnknownScheme(t *testing.T) {
	_, err := startTracing(context.Background(), "grpc://user:secret@collector:4317", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "neither http nor https") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("err = %v; want the scheme refused, without the password", err)
	}
}

func TestTracingToStderrAndToAnAddressStart(t *testing.T) {
	for _, target := range []string{"stderr", "127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"} {
		tracing, err := startTracing(context.Background(), target, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		if tracing.tracing == nil || tracing.provider == nil {
			t.Errorf("%s: tracing is off", target)
		}
		tracing.stop() // nothing was recorded, so nothing is sent
	}
}

func TestEachHTTPRequestIsAServerSpanNamedAfterItsRoute(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	tracing := &tracer{tracing: otel.New(otel.Options.TracerProvider(provider)), provider: provider,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	request := httptest.NewRequest(http.MethodGet, "/orders/7", nil)
	request.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	tracing.http(mux).ServeHTTP(httptest.NewRecorder(), request)

	spans := exporter.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans; want 1", len(spans))
	}
	span := spans[0]
	if span.Name != "GET /orders/{id}" {
		t.Errorf("span %q; want the route's pattern", span.Name)
	}
	if span.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("the span does not continue the caller's trace: parent %v", span.Parent)
	}
	if span.Status.Code != codes.Error {
		t.Errorf("a 503 has status %v; want Error", span.Status.Code)
	}
}
