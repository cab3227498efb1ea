package examples_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/testenv"
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

// The service's domain: an order event, and a price asked for by request and
// reply.
type (
	newcomerOrder struct {
		ID       string
		Item     string
		Quantity int
	}
	newcomerQuestion struct {
		Item     string
		Quantity int
	}
	newcomerPrice struct{ Cents int }
)

// newcomerNames are the service's queue, topic and table names: constants in a
// real service, unique per run here.
type newcomerNames struct{ queue, topic, prices, outbox, claims string }

// newcomerShop is the service's own code: its tables and its handlers.
type newcomerShop struct {
	orders, shipments string
	poisonAttempts    atomic.Int32
}

// save stores an order's row in the caller's transaction; placing the same
// order again (a client's retry) stores nothing new.
func (s *newcomerShop) save(ctx context.Context, tx *sql.Tx, order newcomerOrder) error {
	_, err := tx.ExecContext(ctx, "INSERT IGNORE INTO "+s.orders+" (id, item, quantity) VALUES (?, ?, ?)",
		order.ID, order.Item, order.Quantity)
	return err
}

// ship is the typed handler: it records the shipment in the batch's
// transaction, beside the idempotency claim. An order for "poison" always
// fails, so it spends the retry budget and is dead-lettered.
func (s *newcomerShop) ship(ctx context.Context, order newcomerOrder) error {
	if order.Item == "poison" {
		s.poisonAttempts.Add(1)
		return fmt.Errorf("order %s cannot be shipped: the warehouse refuses %q", order.ID, order.Item)
	}
	tx := messaging.TransactionSlotFrom(ctx).Tx
	_, err := tx.ExecContext(ctx, "INSERT INTO "+s.shipments+" (order_id) VALUES (?)", order.ID)
	return err
}

// price answers a request.
func (s *newcomerShop) price(_ context.Context, _ messaging.Delivery, question newcomerQuestion) (newcomerPrice, error) {
	if question.Quantity <= 0 {
		return newcomerPrice{}, fmt.Errorf("a quantity of %d cannot be priced", question.Quantity)
	}
	return newcomerPrice{Cents: 1299 * question.Quantity}, nil
}

// place is the body of the service's POST /orders: the order's row and its
// message commit together in one SQL transaction, and the outbox publishes the
// message once it committed. The message id is the order's, so placing the
// same order twice publishes the same message twice, and the consumer's
// idempotency claim takes the second as a duplicate.
func (s *newcomerShop) place(ctx context.Context, publishing messaging.Connector, order newcomerOrder) error {
	return transactional.Run(ctx, publishing, func(ctx context.Context, state transactional.State) error {
		if err := s.save(ctx, state.Tx, order); err != nil {
			return fmt.Errorf("store order %s: %w", order.ID, err)
		}
		_, err := state.Writer.Write(ctx, messaging.Dispatch{MessageID: order.ID, Message: order})
		return err // nil: the order and its message commit together
	})
}

// newcomerService is what the wiring returns: the outbox connector the
// service publishes through, its one request/reply call, and its Close.
type newcomerService struct {
	publishing messaging.Connector
	ask        func(context.Context, newcomerQuestion) (newcomerPrice, error)
	close      func(context.Context) error
}

// newcomerWiring is a whole service as we recommend writing it: RabbitMQ, an
// outbox on MariaDB, a typed consumer in a transaction guarded by idempotency
// with retry and dead-lettering, request and reply, /status and /metrics.
// Everything between the markers is wiring; TestANewcomersServiceIsSixtyLinesOfWiring
// counts it. A fault at start is returned at once, for main to exit with.
func newcomerWiring(ctx context.Context, db *sql.DB, address string, listener net.Listener,
	names newcomerNames, shop *newcomerShop) (*newcomerService, error) {
	// newcomer:begin
	registry := prom.NewRegistry()
	metrics, err := prometheus.New(registry, names.queue, names.prices) // the stream label's values
	if err != nil {
		return nil, err
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(address), rabbitmq.Options.Monitor(metrics.Transport()))
	outbox, relay := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(names.outbox),
		sqlmq.Options.Monitor(metrics.Outbox()))
	claims, err := idempotency.NewSQLStore(db, sqldialect.MySQL, idempotency.StoreOptions.Table(names.claims))
	if err != nil {
		return nil, err
	}
	// Both tables, created when missing: safe at every start.
	if err := errors.Join(sqlmq.CreateSchema(ctx, db, sqldialect.MySQL, names.outbox), claims.CreateTable(ctx)); err != nil {
		return nil, err
	}
	order, codec := reflect.TypeFor[newcomerOrder](), serialization.Options.Monitor(metrics.Serialization())
	consuming := serialization.New(transport, serialization.Options.ReadTypes(map[string]reflect.Type{names.topic: order}), codec)
	publishing := serialization.New(outbox, serialization.Options.WriteTypes(map[reflect.Type]string{order: names.topic}), codec)

	// Retry outermost, then one transaction per batch, the claims written in it.
	budget := retrypolicy.Exponential(3, 50*time.Millisecond, 200*time.Millisecond) // stated once; a service waits seconds
	worker := messaging.Chain(retry.Middleware(retry.Options.Policy(budget), retry.Options.Monitor(metrics.Retry())),
		transactional.Middleware(publishing, transactional.Options.Monitor(metrics.Transactional())),
		idempotency.InTransaction(claims, idempotency.Options.Monitor(metrics.Idempotency())))(messaging.HandleEach(shop.ship))
	// The settlement, stated on the subscription: {queue}.dlq after the budget,
	// {queue}.parked for what does not decode.
	settle := streaming.SubscriptionOptions.Settlement(deadletter.Options.Policy(budget),
		deadletter.Options.Monitor(metrics.Settlement()))
	consumer := streaming.New(consuming, streaming.Options.Monitor(metrics.Streaming()), streaming.Options.Subscriptions(
		streaming.NewSubscription(names.queue, streaming.SubscriptionOptions.Topics(names.topic),
			streaming.SubscriptionOptions.AddWorkers(worker, worker), settle)))
	go relay.Listen()
	go consumer.Listen()
	if err := consumer.Started(ctx); err != nil {
		return nil, err
	}
	responder, err := request.Serve(ctx, transport, names.prices, shop.price, request.Options.Monitor(metrics.Request()))
	if err != nil {
		return nil, err
	}
	requester, err := request.NewRequester[newcomerQuestion, newcomerPrice](ctx, transport, "", names.prices,
		request.Options.Monitor(metrics.Request()))
	if err != nil {
		return nil, err
	}

	checker := status.New(status.Options.Connector(transport), status.Options.Check("database", db.PingContext),
		status.Options.Check("subscriptions", func(context.Context) error { return consumer.Health() }))
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.Handle("GET /status", checker) // 200 or 503, the report as JSON; each check bounded
	server := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(listener) }()

	// Close in order: HTTP, what consumes, the outbox's relay and connections, the transport last.
	stop := func(ctx context.Context) error { // ctx bounds the HTTP drain
		return errors.Join(server.Shutdown(ctx), consumer.Close(), responder.Close(), requester.Close(),
			relay.Close(), publishing.Close(), claims.Close(), checker.Close(), transport.Close())
	}
	return &newcomerService{publishing: publishing, ask: requester.Do, close: stop}, nil
	// newcomer:end
}

// newcomerMarker builds a marker's text so that this file holds each marker
// only once, where it marks.
func newcomerMarker(which string) string { return "// newcomer:" + which }

// TestANewcomersServiceIsSixtyLinesOfWiring counts the wiring above: the lines
// between the markers that are neither blank nor comments. It fails above 60,
// and for a line wider than 130 columns (a tab counted as 4), so that the
// count cannot be met by packing several statements onto one line.
func TestANewcomersServiceIsSixtyLinesOfWiring(t *testing.T) {
	const limit, width = 60, 130
	source, err := os.ReadFile("newcomer_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(source), "\n")
	begin, end := -1, -1
	for i, line := range lines {
		switch strings.TrimSpace(line) {
		case newcomerMarker("begin"):
			begin = i
		case newcomerMarker("end"):
			end = i
		}
	}
	if begin < 0 || end < begin {
		t.Fatal("the newcomer markers are missing from newcomer_test.go")
	}
	count := 0
	for i, line := range lines[begin+1 : end] {
		code := strings.TrimSpace(line)
		if code == "" || strings.HasPrefix(code, "//") {
			continue
		}
		count++
		if columns := len(strings.ReplaceAll(line, "\t", "    ")); columns > width {
			t.Errorf("line %d of newcomer_test.go is %d columns wide, over %d", begin+2+i, columns, width)
		}
	}
	t.Logf("the newcomer's service is %d lines of wiring (limit %d)", count, limit)
	if count > limit {
		t.Fatalf("the newcomer's service is %d lines of wiring, over the %d a service like it should need", count, limit)
	}
}

// TestANewcomersServiceRunsAgainstTheLocalServices runs the wiring above on the
// local RabbitMQ and MariaDB: an order placed through the outbox is shipped
// once, and placing it again (the same message id) is a duplicate; a poison
// order spends its retry budget and lands in {queue}.dlq; one request is
// answered; /status is 200 and /metrics has a metric of every package wired.
func TestANewcomersServiceRunsAgainstTheLocalServices(t *testing.T) {
	address := testenv.Broker(t)
	db := testenv.MySQL(t)
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	names := newcomerNames{
		queue: "newcomer-ship-" + suffix, topic: "newcomer-order-placed-" + suffix, prices: "newcomer-prices-" + suffix,
		outbox: "newcomer_outbox_" + suffix, claims: "newcomer_claims_" + suffix,
	}
	shop := &newcomerShop{orders: "newcomer_orders_" + suffix, shipments: "newcomer_shipments_" + suffix}
	mustExec(t, db, "CREATE TABLE "+shop.orders+" (id varchar(64) NOT NULL PRIMARY KEY, item varchar(255) NOT NULL, quantity int NOT NULL)")
	mustExec(t, db, "CREATE TABLE "+shop.shipments+" (n bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, order_id varchar(64) NOT NULL)")
	t.Cleanup(func() {
		for _, table := range []string{shop.orders, shop.shipments, names.outbox, names.claims} {
			_, _ = db.Exec("DROP TABLE IF EXISTS " + table)
		}
		queues := []string{names.queue, names.queue + ".dlq", names.queue + ".parked",
			names.prices, names.prices + ".dlq", names.prices + ".parked"}
		if err := testenv.DeleteTopology(address, []string{names.topic}, queues...); err != nil {
			t.Log(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	service, err := newcomerWiring(ctx, db, address, listener, names, shop)
	if err != nil {
		_ = listener.Close()
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = service.close(ctx)
		}
	}()
	base := "http://" + listener.Addr().String()

	// One order, shipped once; the same order placed again is the same
	// message id, which the idempotency claim answers as a duplicate.
	order := newcomerOrder{ID: messaging.NewID(), Item: "book", Quantity: 2}
	if err := shop.place(ctx, service.publishing, order); err != nil {
		t.Fatal(err)
	}
	newcomerEventually(t, "order "+order.ID+" to be shipped", func() bool { return newcomerShipments(t, db, shop, order.ID) == 1 })
	if err := shop.place(ctx, service.publishing, order); err != nil {
		t.Fatal(err)
	}
	newcomerEventually(t, "the second copy of order "+order.ID+" to be a duplicate", func() bool {
		return newcomerMetric(t, base, "idempotency_total", `outcome="duplicate"`, `stream="`+names.queue+`"`) == "1"
	})
	if shipped := newcomerShipments(t, db, shop, order.ID); shipped != 1 {
		t.Fatalf("order %s was shipped %d times, want once", order.ID, shipped)
	}

	// A poison order: three attempts (the budget), then {queue}.dlq.
	poison := newcomerOrder{ID: messaging.NewID(), Item: "poison", Quantity: 1}
	if err := shop.place(ctx, service.publishing, poison); err != nil {
		t.Fatal(err)
	}
	raw := rawBroker(t, address)
	defer raw.conn.Close()
	if body := raw.receive(t, names.queue+".dlq", 30*time.Second); !strings.Contains(string(body), poison.ID) {
		t.Fatalf("%s.dlq holds %q, not the poison order %s", names.queue, body, poison.ID)
	}
	if attempts := shop.poisonAttempts.Load(); attempts != 3 {
		t.Fatalf("the poison order was tried %d times before it was dead-lettered, want the budget's 3", attempts)
	}

	// One request, one answer.
	price, err := service.ask(ctx, newcomerQuestion{Item: "book", Quantity: 3})
	if err != nil || price.Cents != 3897 {
		t.Fatalf("the price of 3 books is %+v, %v; want 3897 cents", price, err)
	}

	// /status answers 200 with every check passing.
	code, body := newcomerGet(t, base+"/status")
	if code != http.StatusOK || !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("GET /status: %d %s", code, body)
	}
	// /metrics has a metric of every package wired.
	_, body = newcomerGet(t, base+"/metrics")
	for pkg, metric := range map[string]string{
		"rabbitmq": "amqp_publish_total", "sqlmq": "outbox_confirmed_total",
		"serialization": "serialization_decoded_total", "transactional": "handler_transaction_events_total",
		"retry": "handler_attempts_total", "deadletter": "consumer_settled_total",
		"streaming": "consumer_acknowledged_total", "idempotency": "idempotency_total",
		"request (requester)": "request_total", "request (responder)": "request_replies_total",
	} {
		if !strings.Contains(body, "\n"+metric+"{") && !strings.Contains(body, "\n"+metric+" ") {
			t.Errorf("GET /metrics has no %s, the metric of %s", metric, pkg)
		}
	}

	closing, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	closed = true
	if err := service.close(closing); err != nil {
		t.Fatalf("close the service: %v", err)
	}
}

// newcomerShipments counts the shipments of one order.
func newcomerShipments(t *testing.T, db *sql.DB, shop *newcomerShop, id string) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM "+shop.shipments+" WHERE order_id = ?", id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// newcomerEventually polls done for up to 30 seconds.
func newcomerEventually(t *testing.T, what string, done func() bool) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, what, done)
}

// newcomerGet fetches url within 10 seconds.
func newcomerGet(t *testing.T, url string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	response, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response.StatusCode, string(body)
}

// newcomerMetric returns the value of the series of metric whose labels
// include every one of labels, or "" when /metrics has none.
func newcomerMetric(t *testing.T, base, metric string, labels ...string) string {
	t.Helper()
	_, body := newcomerGet(t, base+"/metrics")
next:
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") {
			continue
		}
		for _, label := range labels {
			if !strings.Contains(line, label) {
				continue next
			}
		}
		return line[strings.LastIndexByte(line, ' ')+1:]
	}
	return ""
}
