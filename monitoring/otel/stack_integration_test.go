package otel

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

type placedOrder struct {
	OrderID string `json:"order_id"`
}

type shippedOrder struct {
	OrderID string `json:"order_id"`
}

// TestAnOrderIsOneTraceFromTheRequestToTheLastHandler wires the example
// service's stack on the local RabbitMQ and MariaDB with tracing on every
// part: an HTTP request stores an order and its order-placed message through
// the outbox; the relay publishes it; a consumer ships it in a transaction and
// writes order-shipped through the outbox; the relay publishes that; a second
// consumer records it. Each of 20 orders (placed concurrently, counted by id)
// is one trace of seven spans, each the child of the one before:
// request, create, publish, process, create, publish, process.
func TestAnOrderIsOneTraceFromTheRequestToTheLastHandler(t *testing.T) {
	began := time.Now()
	url := testenv.Broker(t)
	db := testenv.MySQL(t)
	locked := time.Since(began)
	const total = 20
	placedX, shippedX := testenv.Name(t, "otel-placed"), testenv.Name(t, "otel-shipped")
	shipQ, logQ := testenv.Name(t, "otel-ship"), testenv.Name(t, "otel-log")
	t.Cleanup(func() {
		testenv.DeleteTopology(url, []string{placedX, shippedX}, shipQ, shipQ+".dlq", shipQ+".parked", logQ, logQ+".dlq", logQ+".parked")
	})
	table := outboxTable(t, db)
	orders := "otel_orders_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	if _, err := db.Exec("CREATE TABLE " + orders + " (id VARCHAR(64) PRIMARY KEY, status VARCHAR(16) NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + orders) })

	rec := newRecorder()
	tracing := New(Options.TracerProvider(rec.provider))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	transport := tracing.Transport(rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet)))
	defer transport.Close()
	outbox, relay := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(table),
		sqlmq.Options.Dialect(sqldialect.MySQL), sqlmq.Options.Logger(quiet))
	readTypes := map[string]reflect.Type{placedX: reflect.TypeOf(placedOrder{}), shippedX: reflect.TypeOf(shippedOrder{})}
	writeTypes := map[reflect.Type]string{reflect.TypeOf(placedOrder{}): placedX, reflect.TypeOf(shippedOrder{}): shippedX}
	encodedOutbox := serialization.New(tracing.Outbox(outbox),
		serialization.Options.ReadTypes(readTypes), serialization.Options.WriteTypes(writeTypes), serialization.Options.Logger(quiet))
	encodedTransport := serialization.New(transport,
		serialization.Options.ReadTypes(readTypes), serialization.Options.WriteTypes(writeTypes), serialization.Options.Logger(quiet))

	budget := retrypolicy.Fixed(3, 10*time.Millisecond)
	shipper := tracing.Handler(retry.New(
		transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
			return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
				for _, message := range messages {
					placed := message.(placedOrder)
					if _, err := state.Tx.ExecContext(ctx, "UPDATE "+orders+" SET status = 'shipped' WHERE id = ?", placed.OrderID); err != nil {
						panic(err)
					}
					if _, err := state.Writer.Write(ctx, messaging.Dispatch{Message: shippedOrder{OrderID: placed.OrderID}}); err != nil {
						panic(err)
					}
				}
			})
		}),
		retry.Options.Policy(budget), retry.Options.Logger(quiet)))
	var mu sync.Mutex
	recorded := map[string]int{}
	all := make(chan struct{})
	recorder := tracing.Handler(messaging.HandlerFunc(func(_ context.Context, messages ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, message := range messages {
			recorded[message.(shippedOrder).OrderID]++
		}
		if len(recorded) == total {
			select {
			case <-all:
			default:
				close(all)
			}
		}
	}))
	consumer := streaming.New(encodedTransport, streaming.Options.Logger(quiet), streaming.Options.Subscriptions(
		streaming.NewSubscription(shipQ, streaming.SubscriptionOptions.Topics(placedX),
			streaming.SubscriptionOptions.AddWorkers(shipper, shipper), streaming.SubscriptionOptions.BatchCapacity(1),
			streaming.SubscriptionOptions.RetryPolicy(budget)),
		streaming.NewSubscription(logQ, streaming.SubscriptionOptions.Topics(shippedX),
			streaming.SubscriptionOptions.AddWorkers(recorder), streaming.SubscriptionOptions.BatchCapacity(1),
			streaming.SubscriptionOptions.RetryPolicy(budget)),
	))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stopped := run(t, consumer.Listen, consumer)
	defer stopped()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	relayStopped := run(t, relay.Listen, relay)
	defer relayStopped()

	api := httptest.NewServer(placeOrders(t, rec, db, encodedOutbox, orders))
	defer api.Close()

	traces := make(map[string]trace.TraceID, total) // order id -> the request's trace
	var placing sync.WaitGroup
	var tracesMu sync.Mutex
	for i := range total {
		placing.Go(func() {
			id := fmt.Sprint("order-", i)
			response, err := http.Post(api.URL+"/orders?id="+id, "text/plain", nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer response.Body.Close()
			var placed struct{ Trace string }
			if response.StatusCode != http.StatusCreated || json.NewDecoder(response.Body).Decode(&placed) != nil {
				t.Errorf("placing %s answered %s", id, response.Status)
				return
			}
			traceID, _ := trace.TraceIDFromHex(placed.Trace)
			tracesMu.Lock()
			traces[id] = traceID
			tracesMu.Unlock()
		})
	}
	placing.Wait()
	placed := time.Since(began)
	select {
	case <-all:
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("%d of %d orders recorded as shipped within a minute", len(recorded), total)
	}
	mu.Lock()
	for id, n := range recorded {
		if n != 1 {
			t.Errorf("order %s recorded %d times", id, n)
		}
	}
	mu.Unlock()

	// The last process span ends just after its handler returned.
	names := []string{"POST /orders", placedX + " create", placedX + " publish", shipQ + " process",
		shippedX + " create", shippedX + " publish", logQ + " process"}
	byTrace := waitForSpans(t, rec, total*len(names))
	if len(traces) != total {
		t.Fatalf("%d orders placed; want %d", len(traces), total)
	}
	for id, traceID := range traces {
		spans := byTrace[traceID]
		if len(spans) != len(names) {
			t.Errorf("order %s: %d spans in its trace; want %d: %v", id, len(spans), len(names), spanNames(spans))
			continue
		}
		var parent trace.SpanContext
		for i, name := range names {
			span, ok := find(spans, name)
			if !ok {
				t.Errorf("order %s: no span %q in its trace: %v", id, name, spanNames(spans))
				break
			}
			if i == 0 && span.Parent.IsValid() {
				t.Errorf("order %s: the request span has a parent", id)
			}
			if i > 0 && span.Parent.SpanID() != parent.SpanID() {
				t.Errorf("order %s: %q is the child of %s, want %s (%s)", id, name, span.Parent.SpanID(), parent.SpanID(), names[i-1])
			}
			parent = span.SpanContext
		}
	}
	t.Logf("%d orders, %d spans in %d traces; the services' locks took %s, placed at %s, all traced at %s",
		total, len(rec.spans()), len(byTrace), locked.Round(time.Millisecond), placed.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

// placeOrders is the HTTP edge: a SERVER span from the request's own trace
// context (if any), then the order row and its message in one transaction.
func placeOrders(t *testing.T, rec recorder, db *sql.DB, outbox messaging.Connector, orders string) http.Handler {
	tracer := rec.provider.Tracer("test")
	connection, err := outbox.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = connection.Close() })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, "POST /orders", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		id := r.URL.Query().Get("id")
		ctx, slot := messaging.WithTransactionSlot(ctx)
		writer, err := connection.CommitWriter(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer writer.Close()
		if _, err := slot.Tx.ExecContext(ctx, "INSERT INTO "+orders+" (id, status) VALUES (?, 'placed')", id); err != nil {
			_ = writer.Rollback()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if _, err := writer.Write(ctx, messaging.Dispatch{Message: placedOrder{OrderID: id}}); err != nil {
			_ = writer.Rollback()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := writer.Commit(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"trace": span.SpanContext().TraceID().String()})
	})
}

// waitForSpans waits (bounded) until at least want spans ended and groups them by trace.
func waitForSpans(t *testing.T, rec recorder, want int) map[trace.TraceID][]tracetest.SpanStub {
	t.Helper()
	timeout := time.After(10 * time.Second)
wait:
	for len(rec.spans()) < want {
		select {
		case <-rec.ended: // the real services' goroutines end the spans
		case <-timeout:
			break wait
		}
	}
	byTrace := map[trace.TraceID][]tracetest.SpanStub{}
	for _, span := range rec.spans() {
		byTrace[span.SpanContext.TraceID()] = append(byTrace[span.SpanContext.TraceID()], span)
	}
	return byTrace
}

func find(spans []tracetest.SpanStub, name string) (tracetest.SpanStub, bool) {
	for _, span := range spans {
		if span.Name == name {
			return span, true
		}
	}
	return tracetest.SpanStub{}, false
}

func spanNames(spans []tracetest.SpanStub) []string {
	names := make([]string, len(spans))
	for i, span := range spans {
		names[i] = span.Name
	}
	return names
}

// run starts listen on a goroutine and returns how to stop it, bounded.
func run(t *testing.T, listen func(), closer io.Closer) func() {
	done := make(chan struct{})
	go func() { defer close(done); listen() }()
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = closer.Close()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("Listen did not return within 30 s of Close")
			}
		})
	}
}

// outboxTable creates a fresh outbox table on MariaDB and drops it when the test ends.
func outboxTable(t *testing.T, db *sql.DB) string {
	t.Helper()
	table := "otel_outbox_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(ddl) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("create the outbox table: %v\n%s", err, statement)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	return table
}
