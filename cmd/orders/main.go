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
// in order: HTTP, then the consumer, then the outbox dispatcher.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"net"
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
	// connectionName is what the broker shows for the service's connections;
	// empty means orders-example.
	connectionName string
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

// run builds the service in the order the library composes and serves until
// ctx ends; it returns an error only for a fault at start.
func run(ctx context.Context, s settings, logger *slog.Logger) error {
	svc := &service{settings: s, logger: slog.New(newRedactingHandler(logger.Handler(), s.secrets()...))}
	svc.settings.server = s.server.withDefaults()
	defer svc.release()
	if err := svc.build(ctx); err != nil {
		return err
	}
	return svc.serve(ctx)
}

// service holds the parts of the running service, each made by one step of
// build; release undoes the steps that hold something, last first.
type service struct {
	settings settings
	logger   *slog.Logger
	releases []func()

	db       *sql.DB
	registry *prom.Registry
	metrics  *prometheus.Metrics
	tracing  *tracer

	transport        messaging.Connector
	outbox           messaging.Connector
	dispatcher       messaging.ListenCloser
	encodedTransport messaging.Connector
	encodedOutbox    messaging.Connector
	shipper          messaging.Handler
	recorder         messaging.Handler
	settlement       streaming.SubscriptionOption
	consumer         *streaming.Consumer
	orders           *ordersAPI
	stopQuotes       func()
}

// build makes each part, in the order of the README's architecture.
func (svc *service) build(ctx context.Context) error {
	for _, step := range []func(context.Context) error{
		svc.checkSettings,
		svc.openDatabase,
		svc.openMetrics,
		svc.startTracing,
		svc.openTransport,    // 1. the transport
		svc.openOutbox,       // 2. the outbox over it
		svc.encode,           // 3. serialization on each side
		svc.buildHandlers,    // 4. transaction, retry, settlement
		svc.buildConsumer,    // 5. the consumer runtime
		svc.openAPI,          // 6. health and the HTTP API
		svc.startShipmentLog, // 7. the stream projection
		svc.startQuotes,      // 8. request and reply
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// onRelease remembers what release must undo.
func (svc *service) onRelease(undo func()) { svc.releases = append(svc.releases, undo) }

// release undoes every step that holds something, last first.
func (svc *service) release() {
	for i := len(svc.releases) - 1; i >= 0; i-- {
		svc.releases[i]()
	}
}

// checkSettings refuses addresses that do not parse and services that are
// not reachable, before anything dials for real.
func (svc *service) checkSettings(context.Context) error {
	if err := checkAddresses(svc.settings); err != nil {
		return err
	}
	return preflight(svc.settings)
}

// openDatabase opens MariaDB, checks it answers and creates the tables.
func (svc *service) openDatabase(ctx context.Context) error {
	db, err := sql.Open("mysql", svc.settings.dsn)
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	svc.db = db
	svc.onRelease(func() { _ = db.Close() })
	if err := checkDatabase(ctx, db, svc.settings.dsn); err != nil {
		return err
	}
	return createTables(ctx, db)
}

// openMetrics registers the monitors every part reports to.
func (svc *service) openMetrics(context.Context) error {
	svc.registry = prom.NewRegistry()
	svc.registry.MustRegister(collectors.NewGoCollector())
	metrics, err := prometheus.New(svc.registry, shipQueue, shippedQueue, quoteQueue)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	svc.metrics = metrics
	return nil
}

// startTracing sets up what -trace asks for.
func (svc *service) startTracing(ctx context.Context) error {
	tracing, err := startTracing(ctx, svc.settings.trace, svc.logger)
	if err != nil {
		return err
	}
	svc.tracing = tracing
	svc.onRelease(tracing.stop)
	return nil
}

// 1. The transport, checked with one connection at start. Every part of the
// service (the consumer, the outbox relay, settlement's set-aside publisher,
// the stream projection, request and reply, the health probe) connects
// through it, and it shares two AMQP connections between them, one for
// publishing and one for consuming, each part on channels of its own
// (rabbitmq.Options.ShareConnections, doc/transport.md).
func (svc *service) openTransport(ctx context.Context) error {
	name := svc.settings.connectionName
	if name == "" {
		name = "orders-example"
	}
	svc.transport = svc.tracing.transport(rabbitmq.New(
		rabbitmq.Options.Addresses(svc.settings.addresses()...),
		rabbitmq.Options.ConnectionName(name),
		rabbitmq.Options.ShareConnections(true),
		rabbitmq.Options.Monitor(svc.metrics.Transport()),
		rabbitmq.Options.Logger(svc.logger),
	))
	svc.onRelease(func() { _ = svc.transport.Close() })
	return checkBroker(ctx, svc.transport, svc.settings.addresses(), svc.logger)
}

// 2. The outbox wraps the raw transport: a Connector for writing in SQL
// transactions, and the dispatcher that publishes the stored rows.
func (svc *service) openOutbox(context.Context) error {
	svc.outbox, svc.dispatcher = sqlmq.New(svc.transport,
		sqlmq.Options.StorageHandle(svc.db),
		sqlmq.Options.RetryDelay(time.Second),
		sqlmq.Options.Monitor(svc.metrics.Outbox()),
		sqlmq.Options.Logger(svc.logger),
	)
	return nil
}

// 3. Serialization wraps each side: the transport for consuming (decode) and
// the outbox for writing (encode before the row is stored).
func (svc *service) encode(context.Context) error {
	readTypes := map[string]reflect.Type{
		placedTopic:  reflect.TypeOf(OrderPlaced{}),
		shippedTopic: reflect.TypeOf(OrderShipped{}),
	}
	writeTypes := map[reflect.Type]string{
		reflect.TypeOf(OrderPlaced{}):  placedTopic,
		reflect.TypeOf(OrderShipped{}): shippedTopic,
	}
	codec := func(connector messaging.Connector) messaging.Connector {
		return serialization.New(connector,
			serialization.Options.ReadTypes(readTypes),
			serialization.Options.WriteTypes(writeTypes),
			serialization.Options.Monitor(svc.metrics.Serialization()),
			serialization.Options.Logger(svc.logger),
		)
	}
	svc.encodedTransport = codec(svc.transport)
	svc.encodedOutbox = codec(svc.tracing.outbox(svc.outbox))
	return nil
}

// 4. Handlers: a transaction per batch (the handler's SQL and its outgoing
// messages commit together) and retry around it; the settlement around them
// is the consumer's, stated with each subscription. The retry budget is
// stated once: five attempts, 100 ms doubling to 2 s. Shipping is guarded by
// an idempotency claim written in the same transaction: a redelivered order
// (a lost acknowledgement) is a duplicate, accepted without shipping it twice.
func (svc *service) buildHandlers(context.Context) error {
	budget := retrypolicy.Exponential(5, 100*time.Millisecond, 2*time.Second)
	claims, err := idempotency.NewSQLStore(svc.db, sqldialect.MySQL)
	if err != nil {
		return err
	}
	svc.onRelease(func() { _ = claims.Close() }) // its prepared statements, before the database
	once := idempotency.InTransaction(claims, idempotency.Options.Monitor(svc.metrics.Idempotency()))
	svc.shipper = svc.tracing.handler(retry.New(
		transactional.New(svc.encodedOutbox, func(state transactional.State) messaging.Handler {
			return once(shipOrders(state.Tx, state.Writer))
		}, transactional.Options.Monitor(svc.metrics.Transactional())),
		retry.Options.Policy(budget),
		retry.Options.Monitor(svc.metrics.Retry()),
		retry.Options.Logger(svc.logger),
	))
	svc.recorder = svc.tracing.handler(retry.New(
		sqltx.New(svc.db, recordShipments,
			sqltx.Options.Monitor(svc.metrics.Transactional())),
		retry.Options.Policy(budget),
		retry.Options.Logger(svc.logger),
	))
	// Settlement is the runtime's, stated once per subscription below: what
	// does not decode is parked, what still fails once retry gave up is
	// dead-lettered, with the same budget, and nothing is set aside twice.
	svc.settlement = streaming.SubscriptionOptions.Settlement(
		deadletter.Options.Policy(budget),
		deadletter.Options.Monitor(svc.metrics.Settlement()),
	)
	return nil
}

// 5. The consumer reads decoded deliveries and feeds the handlers.
func (svc *service) buildConsumer(context.Context) error {
	quorum := svc.settings.quorum
	svc.consumer = streaming.New(svc.encodedTransport,
		streaming.Options.Subscriptions(
			streaming.NewSubscription(shipQueue,
				streaming.SubscriptionOptions.Topics(placedTopic),
				streaming.SubscriptionOptions.StreamReplication(quorum),
				streaming.SubscriptionOptions.AddWorkers(svc.shipper, svc.shipper),
				svc.settlement,
				streaming.SubscriptionOptions.BufferCapacity(64),
				streaming.SubscriptionOptions.BatchCapacity(16),
				streaming.SubscriptionOptions.ReconnectDelay(time.Second),
			),
			streaming.NewSubscription(shippedQueue,
				streaming.SubscriptionOptions.Topics(shippedTopic),
				streaming.SubscriptionOptions.StreamReplication(quorum),
				streaming.SubscriptionOptions.AddWorkers(svc.recorder),
				svc.settlement,
				streaming.SubscriptionOptions.BufferCapacity(64),
				streaming.SubscriptionOptions.BatchCapacity(16),
				streaming.SubscriptionOptions.ReconnectDelay(time.Second),
			),
		),
		streaming.Options.Monitor(svc.metrics.Streaming()),
		streaming.Options.Logger(svc.logger),
	)
	return nil
}

// 6. Health: the broker probe, a bounded database ping and the consumer's
// subscriptions waiting on an outage, with no password in any report; and
// the HTTP API that serves it beside the orders.
func (svc *service) openAPI(ctx context.Context) error {
	checker := status.New(
		status.Options.Connector(svc.transport),
		status.Options.Logger(svc.logger),
		status.Options.Redact(svc.settings.secrets()...),
		status.Options.Check("database", svc.db.PingContext),
		status.Options.Check("subscriptions", subscriptionsCheck(svc.consumer)),
	)
	svc.onRelease(func() { _ = checker.Close() })
	orders, err := newOrdersAPI(ctx, svc.db, svc.encodedOutbox, checker, svc.registry, svc.logger, svc.settings.server.maxBodyBytes)
	if err != nil {
		return err
	}
	svc.orders = orders
	svc.onRelease(orders.close)
	return nil
}

// 7. The shipment log: order-shipped events on a stream, projected into
// MariaDB from a checkpoint kept in the projection's own transaction.
func (svc *service) startShipmentLog(ctx context.Context) error {
	stop, err := startShipmentLog(ctx, svc.transport, svc.db, svc.logger)
	if err != nil {
		return err
	}
	svc.onRelease(stop)
	return nil
}

// 8. Quotes: a responder on orders.quote and the requester the API asks it with.
func (svc *service) startQuotes(ctx context.Context) error {
	asker, stop, err := startQuotes(ctx, svc.transport, svc.db, svc.logger, request.Options.Monitor(svc.metrics.Request()))
	if err != nil {
		return err
	}
	svc.stopQuotes = stop
	svc.onRelease(stop)
	svc.orders.quotes = asker
	return nil
}

// serve listens, runs the dispatcher, the consumer and the HTTP server, and
// on ctx's end (SIGINT, SIGTERM) or the server's failure shuts down in
// order: stop taking orders, then the consumer, then the dispatcher (what it
// did not publish stays in the table for the next start).
func (svc *service) serve(ctx context.Context) error {
	s, logger := svc.settings, svc.logger
	listener, err := net.Listen("tcp", s.http)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another copy running? pass -http to choose another address)", s.http, err)
	}
	server := newServer(svc.tracing.http(svc.orders.routes()), s.server, logger)

	dispatcherDone := make(chan struct{})
	consumerDone := make(chan struct{})
	serverDone := make(chan error, 1)
	go func() { defer close(dispatcherDone); svc.dispatcher.Listen() }()
	go func() { defer close(consumerDone); svc.consumer.Listen() }()
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

	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownLimit)
	defer cancel()
	_ = server.Shutdown(shutdownCtx)
	svc.stopQuotes()
	_ = svc.consumer.Close()
	<-consumerDone
	_ = svc.dispatcher.Close()
	<-dispatcherDone
	logger.Info("orders: stopped")
	return nil
}

// shipOrders marks a placed order shipped and announces it, in the batch's
// transaction (transactional opened it; writer writes into it). A failure
// fails the batch: the transaction rolls back and retry runs it again.
func shipOrders(tx *sql.Tx, writer messaging.Writer) messaging.Handler {
	return messaging.HandleEach(func(ctx context.Context, placed OrderPlaced) error {
		result, err := tx.ExecContext(ctx,
			"UPDATE orders SET status = 'shipped', shipped_at = ? WHERE id = ? AND status = 'placed'",
			time.Now().UTC(), placed.OrderID)
		if err != nil {
			return fmt.Errorf("orders: mark %s shipped: %w", placed.OrderID, err)
		}
		if n, _ := result.RowsAffected(); n == 0 {
			return nil // a redelivery of an order already shipped: nothing more to do
		}
		if _, err := writer.Write(ctx, messaging.Dispatch{Message: OrderShipped{OrderID: placed.OrderID}}); err != nil {
			return fmt.Errorf("orders: announce %s shipped: %w", placed.OrderID, err)
		}
		return nil
	})
}

// recordShipments keeps a log of order-shipped events; a redelivery is a no-op.
func recordShipments(tx *sql.Tx) messaging.Handler {
	return messaging.HandleEach(func(ctx context.Context, shipped OrderShipped) error {
		if _, err := tx.ExecContext(ctx,
			"INSERT IGNORE INTO order_events (order_id, event, recorded_at) VALUES (?, ?, ?)",
			shipped.OrderID, shippedTopic, time.Now().UTC()); err != nil {
			return fmt.Errorf("orders: record %s shipped: %w", shipped.OrderID, err)
		}
		return nil
	})
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
