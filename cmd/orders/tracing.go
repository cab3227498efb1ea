package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redact"
	"github.com/warrenmq/messaging/monitoring/otel"
)

// tracingShutdownLimit bounds how long the last spans may take to leave at shutdown.
const tracingShutdownLimit = 5 * time.Second

// tracer is the service's tracing, set by -trace: off (the default) leaves
// every part as it was, so it costs nothing; "stderr" prints each span as a
// JSON line on standard error; anything else is where an OpenTelemetry
// collector takes OTLP over HTTP (host:port, or an http:// or https:// URL).
type tracer struct {
	tracing  *otel.Tracing // nil when off
	provider *sdktrace.TracerProvider
	logger   *slog.Logger
}

// startTracing sets up what -trace asks for.
func startTracing(ctx context.Context, target string, logger *slog.Logger) (*tracer, error) {
	target = strings.TrimSpace(target)
	if target == "" || target == "off" {
		return &tracer{logger: logger}, nil
	}
	exporter, err := newExporter(ctx, target)
	if err != nil {
		return nil, err
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "orders"))),
	)
	where := "stderr"
	if target != "stderr" {
		where = redact.Address(target)
	}
	logger.Info("orders: tracing", "to", where)
	return &tracer{
		tracing:  otel.New(otel.Options.TracerProvider(provider), otel.Options.Propagator(propagation.TraceContext{})),
		provider: provider,
		logger:   logger,
	}, nil
}

func newExporter(ctx context.Context, target string) (sdktrace.SpanExporter, error) {
	if target == "stderr" {
		return stdouttrace.New(stdouttrace.WithWriter(os.Stderr))
	}
	var option otlptracehttp.Option
	switch {
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		option = otlptracehttp.WithEndpointURL(target)
	case strings.Contains(target, "://"):
		return nil, fmt.Errorf("-trace %s: the scheme is neither http nor https; pass stderr, host:port or an http(s) URL of an OTLP collector", redact.Address(target))
	default:
		return otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(target), otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, option)
}

// stop sends the spans not yet sent, within tracingShutdownLimit.
func (t *tracer) stop() {
	if t.provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingShutdownLimit)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.logger.Warn("orders: the last spans were not sent", "error", err)
	}
}

// transport traces the broker side: publishes, the relay's included.
func (t *tracer) transport(connector messaging.Connector) messaging.Connector {
	if t.tracing == nil {
		return connector
	}
	return t.tracing.Transport(connector)
}

// outbox traces the outbox's writes, storing each row's trace context.
func (t *tracer) outbox(connector messaging.Connector) messaging.Connector {
	if t.tracing == nil {
		return connector
	}
	return t.tracing.Outbox(connector)
}

// handler traces each handled batch; put it inside deadletter, outside retry.
func (t *tracer) handler(handler messaging.Handler) messaging.Handler {
	if t.tracing == nil {
		return handler
	}
	return t.tracing.Handler(handler)
}

// http gives each HTTP request a SERVER span, continuing the caller's trace
// when the request carries a traceparent, named after the route it matched.
func (t *tracer) http(next http.Handler) http.Handler {
	if t.tracing == nil {
		return next
	}
	spans := t.provider.Tracer("github.com/warrenmq/messaging/cmd/orders")
	propagator := propagation.TraceContext{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := spans.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		recorder := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		next.ServeHTTP(recorder, r)
		if r.Pattern != "" {
			span.SetName(r.Pattern)
			span.SetAttributes(attribute.String("http.route", r.Pattern))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", recorder.status))
		if recorder.status >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(recorder.status))
		}
	})
}

// statusRecorder remembers the status an HTTP handler answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(status int) {
	s.status = status
	s.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection's own writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
