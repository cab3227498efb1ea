package examples_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

type quickPlaced struct{ OrderID uint64 }
type quickShipped struct{ OrderID uint64 }

// quickShipper is the quick start's handler shape: it gets the live *sql.Tx and a
// Writer bound to the same transaction, and fails by panicking.
type quickShipper struct {
	tx     *sql.Tx
	writer messaging.Writer
	table  string
}

func (h *quickShipper) Handle(ctx context.Context, messages ...any) {
	for _, message := range messages {
		placed := message.(quickPlaced)
		if _, err := h.tx.ExecContext(ctx, "UPDATE "+h.table+" SET shipped = 1 WHERE id = ?", placed.OrderID); err != nil {
			panic(err) // retry recovers this and runs the batch again
		}
		if _, err := h.writer.Write(ctx, messaging.Dispatch{Message: quickShipped{OrderID: placed.OrderID}}); err != nil {
			panic(err)
		}
	}
}

// TestQuickStartAgainstLocalServices composes the stack exactly as
// smarty/messaging v4's quick start does (only the import paths differ) and runs it on the
// local RabbitMQ and MariaDB: an order placed in a transaction is handled in
// another, and its shipped event is published through the outbox.
func TestQuickStartAgainstLocalServices(t *testing.T) {
	url := testenv.Broker(t)
	db := testenv.MySQL(t)
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	orders, outboxTable := "qs_orders_"+suffix, "qs_outbox_"+suffix
	placedType, shippedType := "qs-order-placed-"+suffix, "qs-order-shipped-"+suffix
	queue, watch := "qs-orders-"+suffix, "qs-watch-"+suffix

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mustExec(t, db, "CREATE TABLE "+orders+" (id bigint unsigned NOT NULL PRIMARY KEY, shipped tinyint NOT NULL DEFAULT 0)")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + orders) })
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, outboxTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(ddl) {
		mustExec(t, db, statement)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + outboxTable) })

	// A raw watcher on the shipped exchange, and the placed exchange declared up
	// front (as the consumer will) so the first publish does not wait a retry.
	raw := rawBroker(t, url)
	raw.declare(t, placedType, shippedType, watch)
	defer raw.cleanup(placedType, shippedType, watch, queue, queue+".dlq", queue+".parked")

	// 1. The transport.
	transport := rabbitmq.New(
		rabbitmq.Options.Address(url),
		rabbitmq.Options.Monitor(rabbitmq.NopMonitor{}),
	)
	defer transport.Close()

	// 2. The outbox wraps the raw transport.
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Table(outboxTable),
		sqlmq.Options.Monitor(sqlmq.NopMonitor{}),
	)

	// 3. Serialization wraps each side separately.
	readTypes := map[string]reflect.Type{placedType: reflect.TypeOf(quickPlaced{})}
	writeTypes := map[reflect.Type]string{
		reflect.TypeOf(quickPlaced{}):  placedType,
		reflect.TypeOf(quickShipped{}): shippedType,
	}
	encodedTransport := serialization.New(transport,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
	)
	encodedOutbox := serialization.New(outbox,
		serialization.Options.ReadTypes(readTypes),
		serialization.Options.WriteTypes(writeTypes),
	)

	// 4. A handler runs inside one SQL transaction; retry wraps transactional.
	handler := retry.New(
		transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
			return &quickShipper{tx: state.Tx, writer: state.Writer, table: orders}
		}),
		retry.Options.Backoff(time.Second),
		retry.Options.MaxBackoff(time.Minute),
	)

	// 5. The consumer reads decoded deliveries and feeds the handler.
	consumer := streaming.New(encodedTransport,
		streaming.Options.Subscriptions(
			streaming.NewSubscription(queue,
				streaming.SubscriptionOptions.Topics(placedType),
				streaming.SubscriptionOptions.AddWorkers(handler, handler, handler),
				streaming.SubscriptionOptions.BatchCapacity(64),
			),
		),
	)

	listening := make(chan struct{}, 2)
	go func() { dispatcher.Listen(); listening <- struct{}{} }()
	go func() { consumer.Listen(); listening <- struct{}{} }()

	// Place order 42: the row and order-placed commit together.
	placeCtx, slot := messaging.WithTransactionSlot(ctx)
	connection, err := encodedOutbox.Connect(placeCtx)
	if err != nil {
		t.Fatal(err)
	}
	defer connection.Close()
	writer, err := connection.CommitWriter(placeCtx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := slot.Tx.ExecContext(placeCtx, "INSERT INTO "+orders+" (id) VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Write(placeCtx, messaging.Dispatch{Message: quickPlaced{OrderID: 42}}); err != nil {
		t.Fatal(err)
	}
	if err := writer.Commit(); err != nil {
		t.Fatal(err)
	}

	body := raw.receive(t, watch, 30*time.Second)
	var shipped quickShipped
	if err := json.Unmarshal(body, &shipped); err != nil || shipped.OrderID != 42 {
		t.Fatalf("order-shipped body %q: %v", body, err)
	}
	var flag int
	if err := db.QueryRow("SELECT shipped FROM " + orders + " WHERE id = 42").Scan(&flag); err != nil || flag != 1 {
		t.Fatalf("order 42 shipped = %d, %v", flag, err)
	}

	// On shutdown: the consumer first, then the dispatcher.
	_ = consumer.Close()
	_ = dispatcher.Close()
	for range 2 {
		select {
		case <-listening:
		case <-time.After(30 * time.Second):
			t.Fatal("Listen did not return after Close")
		}
	}
}

func mustExec(t *testing.T, db *sql.DB, statement string) {
	t.Helper()
	if _, err := db.Exec(statement); err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
}

type rawAMQP struct {
	conn *amqp.Connection
	ch   *amqp.Channel
}

func rawBroker(t *testing.T, url string) *rawAMQP {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		t.Fatal(err)
	}
	return &rawAMQP{conn: conn, ch: ch}
}

func (r *rawAMQP) declare(t *testing.T, placed, shipped, watch string) {
	t.Helper()
	for _, step := range []error{
		r.ch.ExchangeDeclare(placed, "fanout", true, false, false, false, nil),
		r.ch.ExchangeDeclare(shipped, "fanout", true, false, false, false, nil),
		func() error { _, err := r.ch.QueueDeclare(watch, true, false, false, false, nil); return err }(),
		r.ch.QueueBind(watch, "", shipped, false, nil),
	} {
		if step != nil {
			t.Fatalf("declare the quick start's topology: %v", step)
		}
	}
}

func (r *rawAMQP) receive(t *testing.T, queue string, limit time.Duration) []byte {
	t.Helper()
	var body []byte
	var err error
	testenv.Eventually(t, limit, "a message on "+queue, func() bool {
		var delivery amqp.Delivery
		var ok bool
		delivery, ok, err = r.ch.Get(queue, true)
		body = delivery.Body
		return ok || err != nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

func (r *rawAMQP) cleanup(placed, shipped string, queues ...string) {
	for _, q := range queues {
		_, _ = r.ch.QueueDelete(q, false, false, false)
	}
	_ = r.ch.ExchangeDelete(placed, false, false)
	_ = r.ch.ExchangeDelete(shipped, false, false)
	_ = r.conn.Close()
}
