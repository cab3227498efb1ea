package otel_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/monitoring/otel"
	"github.com/warrenmq/messaging/monitoring/prometheus"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// Example_withPrometheus wires tracing and the Prometheus monitors into the
// same parts: a message written through the outbox (SQLite here) under a
// request's span, published by the relay and handled by a consumer, is one
// trace of four spans, and the outbox and consumer counters count it.
func Example_withPrometheus() {
	quiet := slog.New(slog.DiscardHandler)
	dir, err := os.MkdirTemp("", "warrenmq-otel-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	for _, statement := range sqlmq.Statements(sqlmq.Schema(sqldialect.SQLite)) {
		if _, err := db.Exec(statement); err != nil {
			fmt.Println(err)
			return
		}
	}

	registry := prom.NewRegistry()
	metrics, err := prometheus.New(registry, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	exporter := tracetest.NewInMemoryExporter()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	tracing := otel.New(otel.Options.TracerProvider(provider))

	broker := memory.New(memory.Options.Logger(quiet))
	defer broker.Close()
	transport := tracing.Transport(broker)
	outbox, relay := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Dialect(sqldialect.SQLite),
		sqlmq.Options.Monitor(metrics.Outbox()), sqlmq.Options.Logger(quiet))
	handled := make(chan struct{})
	consumer := streaming.New(transport, streaming.Options.Logger(quiet), streaming.Options.Monitor(metrics.Streaming()),
		streaming.Options.Subscriptions(streaming.NewSubscription("invoices",
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.AddWorkers(tracing.Handler(messaging.HandlerFunc(func(context.Context, ...any) {
				close(handled)
			}))))))
	go consumer.Listen()
	go relay.Listen()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		fmt.Println(err)
		return
	}

	requestCtx, request := provider.Tracer("example").Start(ctx, "POST /invoices")
	stored := tracing.Outbox(outbox)
	connection, err := stored.Connect(requestCtx)
	if err != nil {
		fmt.Println(err)
		return
	}
	writer, err := connection.Writer(requestCtx) // each Write commits a transaction of its own
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := writer.Write(requestCtx, messaging.Dispatch{RoutingKey: "invoices", Payload: []byte("i-1")}); err != nil {
		fmt.Println(err)
		return
	}
	request.End()
	select {
	case <-handled:
	case <-ctx.Done():
		fmt.Println("not handled within 10 s")
		return
	}
	_ = writer.Close()
	_ = connection.Close()
	_ = consumer.Close() // the process span ends before Close returns
	_ = relay.Close()

	spans := exporter.GetSpans()
	parents := map[string]string{}
	for _, span := range spans {
		parents[span.SpanContext.SpanID().String()] = span.Name
	}
	for _, span := range spans {
		fmt.Printf("%-22s under %q, one trace: %v\n", span.Name, parents[span.Parent.SpanID().String()],
			span.SpanContext.TraceID() == request.SpanContext().TraceID())
	}
	families, _ := registry.Gather()
	for _, family := range families {
		if family.GetName() == "outbox_confirmed_total" {
			fmt.Println("outbox_confirmed_total", family.GetMetric()[0].GetCounter().GetValue())
		}
	}

	// Unordered output:
	// POST /invoices         under "", one trace: true
	// invoices create        under "POST /invoices", one trace: true
	// invoices publish       under "invoices create", one trace: true
	// invoices process       under "invoices publish", one trace: true
	// outbox_confirmed_total 1
}
