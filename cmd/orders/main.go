// Command orders is the example service: it wires the whole stack in the order
// the library composes (transport -> outbox -> serialization -> transactional
// -> retry -> settlement -> streaming) and runs it behind a small HTTP API.
//
//	POST /orders        {"item":"book","quantity":1} -> 201 {"id":"...","status":"placed"}
//	                    with Idempotency-Key: a retry returns the first order (200)
//	GET  /orders/{id}   -> {"id":"...","status":"placed"|"shipped",...}
//	GET  /orders/{id}/quote -> {"order_id":"...","total_cents":2598,...}, asked
//	                    and answered through request and reply (patterns/request)
//	GET  /status        broker, database and consumer health (200 or 503, JSON)
//	GET  /metrics       Prometheus metrics
//
// Bad input gets a 400 naming the field; database errors are logged, never
// sent to the client. A fault at start that no retry fixes (a malformed
// address, bad credentials, a missing vhost or database) stops the service
// with what to do; no output ever carries a password of -amqp or -dsn.
//
// Placing an order writes the order row and an order-placed message in one SQL
// transaction through the outbox. A consumer handles order-placed inside a
// transaction, marks the order shipped and publishes order-shipped through the
// outbox; a second consumer records order-shipped. SIGINT or SIGTERM stops it
// in the seed's order: HTTP, then the consumer, then the outbox dispatcher.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/monitoring/prometheus"
	"github.com/warrenmq/messaging/patterns/idempotency"
	"github.com/warrenmq/messaging/patterns/request"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/status"
	"github.com/warrenmq/messaging/streaming"
)

// The queues this service consumes; also the stream labels of its metrics.
const (
	shipQueue     = "orders.ship"
	shippedQueue  = "orders.shipped-log"
	placedTopic   = "order-placed"
	shippedTopic  = "order-shipped"
	shutdownLimit = 10 * time.Second
)

// OrderPlaced is published when an order is accepted.
type OrderPlaced struct {
	OrderID  string `json:"order_id"`
	Item     string `json:"item"`
	Quantity int    `json:"quantity"`
}

// OrderShipped is published when an order has been shipped.
type OrderShipped struct {
	OrderID string `json:"order_id"`
}

type settings struct {
	amqp string
	dsn  string
	http string
	// trace is -trace: empty (off), stderr, or an OTLP/HTTP collector's address.
	trace string
	// quorum is -quorum: the subscriptions' queues are quorum queues,
	// replicated across a cluster's nodes (declare it before the first start:
	// a queue's type cannot change).
	quorum bool
	// ready, when set, receives the listening address once the service serves.
	ready chan<- string
	// server bounds the HTTP edge; zero fields take the defaults.
	server serverLimits
}

// serverLimits bounds what one HTTP client can hold: a client that sends its
// headers or body slowly, or keeps an idle connection, is dropped after these.
type serverLimits struct {
	readHeaderTimeout time.Duration
	readTimeout       time.Duration // the whole request, body included
	writeTimeout      time.Duration // from the end of the headers to the end of the response
	idleTimeout       time.Duration
	maxHeaderBytes    int
	maxBodyBytes      int64
}

// withDefaults fills zero or negative fields. The write timeout is longer than
// the 10 s an order may take to store, so a slow database gets a 503, not a
// dropped connection.
func (l serverLimits) withDefaults() serverLimits {
	set := func(value *time.Duration, fallback time.Duration) {
		if *value <= 0 {
			*value = fallback
		}
	}
	set(&l.readHeaderTimeout, 5*time.Second)
	set(&l.readTimeout, 10*time.Second)
	set(&l.writeTimeout, 15*time.Second)
	set(&l.idleTimeout, 60*time.Second)
	if l.maxHeaderBytes <= 0 {
		l.maxHeaderBytes = 16 << 10
	}
	if l.maxBodyBytes <= 0 {
		l.maxBodyBytes = 16 << 10
	}
	return l
}

func newServer(handler http.Handler, limits serverLimits, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: limits.readHeaderTimeout,
		ReadTimeout:       limits.readTimeout,
		WriteTimeout:      limits.writeTimeout,
		IdleTimeout:       limits.idleTimeout,
		MaxHeaderBytes:    limits.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

func main() {
	s := settings{}
	flag.Func("amqp", "RabbitMQ address; give it once per node of a cluster, tried in order (env ORDERS_AMQP, addresses separated by spaces; default amqp://guest:guest@127.0.0.1:5672/)", func(value string) error {
		s.amqp = strings.TrimSpace(s.amqp + " " + value)
		return nil
	})
	flag.StringVar(&s.dsn, "dsn", envOr("ORDERS_DSN", "root@tcp(127.0.0.1:3306)/test?parseTime=true"), "MariaDB/MySQL data source name (env ORDERS_DSN)")
	flag.StringVar(&s.http, "http", envOr("ORDERS_HTTP", "127.0.0.1:8080"), "HTTP listen address (env ORDERS_HTTP)")
	flag.StringVar(&s.trace, "trace", envOr("ORDERS_TRACE", ""), "traces: empty for none, stderr to print spans, or host:port or an http(s) URL of an OTLP/HTTP collector (env ORDERS_TRACE)")
	flag.BoolVar(&s.quorum, "quorum", os.Getenv("ORDERS_QUORUM") == "true", "declare the subscriptions' queues as quorum queues, replicated across a cluster (env ORDERS_QUORUM=true)")
	flag.Parse()
	if s.amqp == "" {
		s.amqp = envOr("ORDERS_AMQP", "amqp://guest:guest@127.0.0.1:5672/")
	}

	logger := slog.New(newRedactingHandler(
		slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}), s.secrets()...))
	_ = mysql.SetLogger(driverLogger{logger: logger})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s, logger); err != nil {
		logger.Error("orders: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings, logger *slog.Logger) error {
	logger = slog.New(newRedactingHandler(logger.Handler(), s.secrets()...))
	s.server = s.server.withDefaults()
	if err := checkAddresses(s); err != nil {
		return err
	}
	if err := preflight(s); err != nil {
		return err
	}
	db, err := sql.Open("mysql", s.dsn)
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer db.Close()
	if err := checkDatabase(ctx, db, s.dsn); err != nil {
		return err
	}
	if err := createTables(ctx, db); err != nil {
		return err
	}

	registry := prom.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector())
	metrics, err := prometheus.New(registry, shipQueue, shippedQueue, quoteQueue)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}

	tracing, err := startTracing(ctx, s.trace, logger)
	if err != nil {
		return err
	}
	defer tracing.stop()

	// 1. The transport.
	transport := tracing.transport(rabbitmq.New(
		rabbitmq.Options.Addresses(s.addresses()...),
		rabbitmq.Options.ConnectionName("orders-example"),
		rabbitmq.Options.Monitor(metrics.Transport()),
		rabbitmq.Options.Logger(logger),
	))
	defer transport.Close()
	if err := checkBroker(ctx, transport, s.addresses(), logger); err != nil {
		return err
	}

	// 2. The outbox wraps the raw transport: a Connector for writing in SQL
	//    transactions, and the dispatcher that publishes the stored rows.
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.RetryDelay(time.Second),
		sqlmq.Options.Monitor(metrics.Outbox()),
		sqlmq.Options.Logger(logger),
	)

	// 3. Serialization wraps each side: the transport for consuming (decode)
	//    and the outbox for writing (encode before the row is stored).
	readTypes := map[string]reflect.Type{
		placedTopic:  reflect.TypeOf(OrderPlaced{}),
		shippedTopic: reflect.TypeOf(OrderShipped{}),
	}
	writeTypes := map[reflect.Type]string{
		reflect.TypeOf(OrderPlaced{}):  placedTopic,
		reflect.TypeOf(OrderShipped{}): shippedTopic,
	}
	encodedTransport := serialization.New(transport,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
		serialization.Options.Monitor(metrics.Serialization()),
		serialization.Options.Logger(logger),
	)
	encodedOutbox := serialization.New(tracing.outbox(outbox),
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
		serialization.Options.Monitor(metrics.Serialization()),
		serialization.Options.Logger(logger),
	)

	// 4. Handlers: a transaction per batch (the handler's SQL and its outgoing
	//    messages commit together), retry around it, settlement outermost.
	//    The retry budget is stated once: five attempts, 100 ms doubling to 2 s.
	//    Shipping is guarded by an idempotency claim written in the same
	//    transaction: a redelivered order (a lost acknowledgement) is a
	//    duplicate, accepted without shipping it twice.
	budget := retrypolicy.Exponential(5, 100*time.Millisecond, 2*time.Second)
	claims, err := idempotency.NewSQLStore(db, sqldialect.MySQL)
	if err != nil {
		return err
	}
	once := idempotency.InTransaction(claims, idempotency.Options.Monitor(metrics.Idempotency()))
	shipper := deadletter.New(transport,
		tracing.handler(retry.New(
			transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
				return once(&shipOrders{tx: state.Tx, writer: state.Writer})
			}, transactional.Options.Monitor(metrics.Transactional())),
			retry.Options.Policy(budget),
			retry.Options.Monitor(metrics.Retry()),
			retry.Options.Logger(logger),
		)),
		deadletter.Options.Policy(budget),
		deadletter.Options.Monitor(metrics.Settlement()),
		deadletter.Options.Logger(logger),
	)
	recorder := deadletter.New(transport,
		tracing.handler(retry.New(
			sqltx.New(db, func(tx *sql.Tx) messaging.Handler { return &recordShipments{tx: tx} },
				sqltx.Options.Monitor(metrics.Transactional())),
			retry.Options.Policy(budget),
			retry.Options.Logger(logger),
		)),
		deadletter.Options.Policy(budget),
		deadletter.Options.Monitor(metrics.Settlement()),
		deadletter.Options.Logger(logger),
	)

	// 5. The consumer reads decoded deliveries and feeds the handlers.
	consumer := streaming.New(encodedTransport,
		streaming.Options.Subscriptions(
			streaming.NewSubscription(shipQueue,
				streaming.SubscriptionOptions.Topics(placedTopic),
				streaming.SubscriptionOptions.StreamReplication(s.quorum),
				streaming.SubscriptionOptions.AddWorkers(shipper, shipper),
				streaming.SubscriptionOptions.BufferCapacity(64),
				streaming.SubscriptionOptions.BatchCapacity(16),
				streaming.SubscriptionOptions.ReconnectDelay(time.Second),
			),
			streaming.NewSubscription(shippedQueue,
				streaming.SubscriptionOptions.Topics(shippedTopic),
				streaming.SubscriptionOptions.StreamReplication(s.quorum),
				streaming.SubscriptionOptions.AddWorkers(recorder),
				streaming.SubscriptionOptions.BufferCapacity(64),
				streaming.SubscriptionOptions.BatchCapacity(16),
				streaming.SubscriptionOptions.ReconnectDelay(time.Second),
			),
		),
		streaming.Options.Monitor(metrics.Streaming()),
		streaming.Options.Logger(logger),
	)

	// 6. Health: the broker probe, a bounded database ping and the consumer's
	//    subscriptions waiting on an outage, with no password in any report.
	checker := status.New(
		status.Options.Connector(transport),
		status.Options.Logger(logger),
		status.Options.Redact(s.secrets()...),
		status.Options.Check("database", db.PingContext),
		status.Options.Check("subscriptions", subscriptionsCheck(consumer)),
	)
	defer checker.Close()

	orders, err := newOrdersAPI(ctx, db, encodedOutbox, checker, registry, logger, s.server.maxBodyBytes)
	if err != nil {
		return err
	}
	defer orders.close()

	// 7. The shipment log: order-shipped events on a stream, projected into
	//    MariaDB from a checkpoint kept in the projection's own transaction.
	stopShipmentLog, err := startShipmentLog(ctx, transport, db, logger)
	if err != nil {
		return err
	}
	defer stopShipmentLog()

	// 8. Quotes: a responder on orders.quote and the requester the API asks it with.
	asker, stopQuotes, err := startQuotes(ctx, transport, db, logger, request.Options.Monitor(metrics.Request()))
	if err != nil {
		return err
	}
	defer stopQuotes()
	orders.quotes = asker

	listener, err := net.Listen("tcp", s.http)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another copy running? pass -http to choose another address)", s.http, err)
	}
	server := newServer(tracing.http(orders.routes()), s.server, logger)

	dispatcherDone := make(chan struct{})
	consumerDone := make(chan struct{})
	serverDone := make(chan error, 1)
	go func() { defer close(dispatcherDone); dispatcher.Listen() }()
	go func() { defer close(consumerDone); consumer.Listen() }()
	go func() { serverDone <- server.Serve(listener) }()
	logger.Info("orders: serving", "http", "http://"+listener.Addr().String(), "amqp", redactAll(s.addresses()))
	if s.ready != nil {
		s.ready <- listener.Addr().String()
	}

	select {
	case <-ctx.Done():
		logger.Info("orders: shutting down")
	case err := <-serverDone:
		logger.Error("orders: HTTP server stopped", "error", err)
	}

	// Shutdown in order: stop taking orders, then the consumer, then the
	// dispatcher (what it did not publish stays in the table for next start).
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	_ = server.Shutdown(shutdownCtx)
	stopQuotes()
	_ = consumer.Close()
	<-consumerDone
	_ = dispatcher.Close()
	<-dispatcherDone
	logger.Info("orders: stopped")
	return nil
}

// shipOrders marks each placed order shipped and announces it, in the
// transaction the transactional decorator opened.
type shipOrders struct {
	tx     *sql.Tx
	writer messaging.Writer
}

func (h *shipOrders) Handle(ctx context.Context, messages ...any) {
	for _, message := range messages {
		placed, ok := message.(OrderPlaced)
		if !ok {
			panic(messaging.Fatalf("orders: unexpected message %T on %s", message, shipQueue))
		}
		result, err := h.tx.ExecContext(ctx,
			"UPDATE orders SET status = 'shipped', shipped_at = ? WHERE id = ? AND status = 'placed'",
			time.Now().UTC(), placed.OrderID)
		if err != nil {
			panic(fmt.Errorf("orders: mark %s shipped: %w", placed.OrderID, err))
		}
		if n, _ := result.RowsAffected(); n == 0 {
			continue // a redelivery of an order already shipped: nothing more to do
		}
		if _, err := h.writer.Write(ctx, messaging.Dispatch{Message: OrderShipped{OrderID: placed.OrderID}}); err != nil {
			panic(fmt.Errorf("orders: announce %s shipped: %w", placed.OrderID, err))
		}
	}
}

// recordShipments keeps a log of order-shipped events; a redelivery is a no-op.
type recordShipments struct{ tx *sql.Tx }

func (h *recordShipments) Handle(ctx context.Context, messages ...any) {
	for _, message := range messages {
		shipped, ok := message.(OrderShipped)
		if !ok {
			panic(messaging.Fatalf("orders: unexpected message %T on %s", message, shippedQueue))
		}
		if _, err := h.tx.ExecContext(ctx,
			"INSERT IGNORE INTO order_events (order_id, event, recorded_at) VALUES (?, ?, ?)",
			shipped.OrderID, shippedTopic, time.Now().UTC()); err != nil {
			panic(fmt.Errorf("orders: record %s shipped: %w", shipped.OrderID, err))
		}
	}
}

// subscriptionsCheck fails while a subscription of the consumer is waiting on
// an outage (a database or broker its handlers need does not answer, so it
// holds its messages), naming each: streaming.Consumer.Health.
func subscriptionsCheck(consumer *streaming.Consumer) func(context.Context) error {
	return func(context.Context) error { return consumer.Health() }
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
