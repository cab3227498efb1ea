// Command orders is the example service: it wires the whole stack in the order
// the library composes (transport -> outbox -> serialization -> transactional
// -> retry -> settlement -> streaming) and runs it behind a small HTTP API.
//
//	POST /orders        {"item":"book","quantity":1} -> 201 {"id":"...","status":"placed"}
//	GET  /orders/{id}   -> {"id":"...","status":"placed"|"shipped",...}
//	GET  /status        the broker health probe (200 or 503)
//	GET  /metrics       Prometheus metrics
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
	"net/url"
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
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
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
	// ready, when set, receives the listening address once the service serves.
	ready chan<- string
}

func main() {
	s := settings{}
	flag.StringVar(&s.amqp, "amqp", envOr("ORDERS_AMQP", "amqp://guest:guest@127.0.0.1:5672/"), "RabbitMQ address (env ORDERS_AMQP)")
	flag.StringVar(&s.dsn, "dsn", envOr("ORDERS_DSN", "root@tcp(127.0.0.1:3306)/test?parseTime=true"), "MariaDB/MySQL data source name (env ORDERS_DSN)")
	flag.StringVar(&s.http, "http", envOr("ORDERS_HTTP", "127.0.0.1:8080"), "HTTP listen address (env ORDERS_HTTP)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s, logger); err != nil {
		logger.Error("orders: " + err.Error())
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings, logger *slog.Logger) error {
	if err := preflight(s); err != nil {
		return err
	}
	db, err := sql.Open("mysql", s.dsn)
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer db.Close()
	if err := createTables(ctx, db); err != nil {
		return err
	}

	registry := prom.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector())
	metrics, err := prometheus.New(registry, shipQueue, shippedQueue)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}

	// 1. The transport.
	transport := rabbitmq.New(
		rabbitmq.Options.Address(s.amqp),
		rabbitmq.Options.ConnectionName("orders-example"),
		rabbitmq.Options.Monitor(metrics.Transport()),
		rabbitmq.Options.Logger(logger),
	)
	defer transport.Close()

	// 2. The outbox wraps the raw transport: a Connector for writing in SQL
	//    transactions, and the dispatcher that publishes the stored rows.
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.RetryTimeout(time.Second),
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
	encodedOutbox := serialization.New(outbox,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
		serialization.Options.Monitor(metrics.Serialization()),
		serialization.Options.Logger(logger),
	)

	// 4. Handlers: a transaction per batch (the handler's SQL and its outgoing
	//    messages commit together), retry around it, settlement outermost.
	const attempts = 5
	shipper := deadletter.New(transport,
		retry.New(
			transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
				return &shipOrders{tx: state.Tx, writer: state.Writer}
			}, transactional.Options.Monitor(metrics.Transactional())),
			retry.Options.Backoff(100*time.Millisecond),
			retry.Options.MaxBackoff(2*time.Second),
			retry.Options.MaxAttempts(attempts),
			retry.Options.Monitor(metrics.Retry()),
			retry.Options.Logger(logger),
		),
		deadletter.Options.MaxAttempts(attempts),
		deadletter.Options.Monitor(metrics.Settlement()),
		deadletter.Options.Logger(logger),
	)
	recorder := deadletter.New(transport,
		retry.New(
			sqltx.New(db, func(tx *sql.Tx) messaging.Handler { return &recordShipments{tx: tx} },
				sqltx.Options.Monitor(metrics.Transactional())),
			retry.Options.Backoff(100*time.Millisecond),
			retry.Options.MaxBackoff(2*time.Second),
			retry.Options.MaxAttempts(attempts),
			retry.Options.Logger(logger),
		),
		deadletter.Options.MaxAttempts(attempts),
		deadletter.Options.Monitor(metrics.Settlement()),
		deadletter.Options.Logger(logger),
	)

	// 5. The consumer reads decoded deliveries and feeds the handlers.
	consumer := streaming.New(encodedTransport,
		streaming.Options.Subscriptions(
			streaming.NewSubscription(shipQueue,
				streaming.SubscriptionOptions.Topics(placedTopic),
				streaming.SubscriptionOptions.AddWorkers(shipper, shipper),
				streaming.SubscriptionOptions.BufferCapacity(64),
				streaming.SubscriptionOptions.BatchCapacity(16),
				streaming.SubscriptionOptions.FullDeliveryToHandler(true),
				streaming.SubscriptionOptions.ReconnectDelay(time.Second),
			),
			streaming.NewSubscription(shippedQueue,
				streaming.SubscriptionOptions.Topics(shippedTopic),
				streaming.SubscriptionOptions.AddWorkers(recorder),
				streaming.SubscriptionOptions.BufferCapacity(64),
				streaming.SubscriptionOptions.BatchCapacity(16),
				streaming.SubscriptionOptions.FullDeliveryToHandler(true),
				streaming.SubscriptionOptions.ReconnectDelay(time.Second),
			),
		),
		streaming.Options.Monitor(metrics.Streaming()),
		streaming.Options.Logger(logger),
	)

	checker := status.New(status.Options.Connector(transport), status.Options.Logger(logger))
	defer checker.Close()

	orders, err := newOrdersAPI(ctx, db, encodedOutbox, checker, registry)
	if err != nil {
		return err
	}
	defer orders.close()

	listener, err := net.Listen("tcp", s.http)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another copy running? pass -http to choose another address)", s.http, err)
	}
	server := &http.Server{Handler: orders.routes(), ReadHeaderTimeout: 5 * time.Second}

	dispatcherDone := make(chan struct{})
	consumerDone := make(chan struct{})
	serverDone := make(chan error, 1)
	go func() { defer close(dispatcherDone); dispatcher.Listen() }()
	go func() { defer close(consumerDone); consumer.Listen() }()
	go func() { serverDone <- server.Serve(listener) }()
	logger.Info("orders: serving", "http", "http://"+listener.Addr().String(), "amqp", redact(s.amqp))
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

// preflight turns "connection refused" into what to do about it.
func preflight(s settings) error {
	amqpHost := "127.0.0.1:5672"
	if u, err := url.Parse(s.amqp); err == nil && u.Host != "" {
		amqpHost = u.Host
		if !strings.Contains(amqpHost, ":") {
			amqpHost += ":5672"
		}
	}
	if err := dial(amqpHost); err != nil {
		return fmt.Errorf("cannot reach RabbitMQ at %s: is it running? `make services` starts it (%w)", amqpHost, err)
	}
	cfg, err := mysql.ParseDSN(s.dsn)
	if err != nil {
		return fmt.Errorf("the -dsn %q does not parse: %w", s.dsn, err)
	}
	if cfg.Net == "tcp" {
		if err := dial(cfg.Addr); err != nil {
			return fmt.Errorf("cannot reach MariaDB at %s: is it running? `make services` starts it (%w)", cfg.Addr, err)
		}
	}
	return nil
}

func dial(address string) error {
	conn, err := net.DialTimeout("tcp", address, 3*time.Second)
	if err != nil {
		return err
	}
	return conn.Close()
}

func redact(address string) string {
	if u, err := url.Parse(address); err == nil {
		return u.Redacted()
	}
	return "(unparsable address)"
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
