package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
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

// TestTracingToStderrStartsAndShipsAnOrder runs the service as README and
// doc/tracing.md say to run it, -trace stderr: the tracing decorators sit
// between the transport and everything that declares topology through it, so
// the service must still find the transport's Declarer, start, and ship an
// order, printing the spans of its way through the outbox, the relay and the
// consumer.
func TestTracingToStderrStartsAndShipsAnOrder(t *testing.T) {
	amqpURL := testenv.Broker(t)
	db := testenv.MySQL(t)
	spans := captureStderr(t)
	client := &http.Client{Timeout: 10 * time.Second}

	service := startServiceWith(t, settings{amqp: amqpURL, dsn: testenv.MySQLDSN, trace: "stderr"}, io.Discard)
	ids := placeOrders(t, client, "http://"+service.address, 1)
	waitShipped(t, client, "http://"+service.address, ids)
	waitRecorded(t, db, ids)
	service.stop(t) // the batched spans leave at shutdown

	printed := spans()
	for _, name := range []string{placedTopic + " create", placedTopic + " publish", shipQueue + " process", shippedTopic + " publish"} {
		if !strings.Contains(printed, `"Name":"`+name+`"`) {
			t.Errorf("no span %q among the %d bytes printed on stderr", name, len(printed))
		}
	}
}

// captureStderr points os.Stderr at a file until the test ends (the stderr
// exporter writes to whatever os.Stderr is when tracing starts) and returns
// a function that reads what was written so far.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	original := os.Stderr
	os.Stderr = file
	t.Cleanup(func() {
		os.Stderr = original
		_ = file.Close()
	})
	return func() string {
		content, err := os.ReadFile(file.Name())
		if err != nil {
			t.Fatal(err)
		}
		return string(content)
	}
}
