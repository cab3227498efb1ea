package deadletter_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	. "github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// outageLength is how long MariaDB stays stopped. `make test` runs it short;
// the scenario is -deadletter.outage=45s.
var outageLength = flag.Duration("deadletter.outage", 12*time.Second, "how long TestServicesADatabaseOutageDeadLettersNothing keeps MariaDB stopped (45s reproduces the issue)")

type placedOrder struct{ OrderID int }
type shippedOrder struct{ OrderID int }

// TestServicesADatabaseOutageDeadLettersNothing: 300 order-placed messages
// wait in a queue consumed through deadletter(retry(transactional(outbox)))
// as cmd/orders composes it (5 attempts, 100 ms to 2 s backoff) while MariaDB
// is stopped; none may be dead-lettered, and all are handled (their orders
// shipped, their order-shipped messages published through the outbox) once
// MariaDB is back. Before, 58 of 300 landed in .dlq after 45 s down.
func TestServicesADatabaseOutageDeadLettersNothing(t *testing.T) {
	const warm, waiting, attempts = 20, 300, 5
	url := testenv.Broker(t) // the broker lock first, then the database's: every test takes them in this order
	testenv.DisruptDatabases(t)
	db := testenv.OpenMySQL(t)
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	orders, outboxTable := "outage_orders_"+suffix, "outage_outbox_"+suffix
	placedType, shippedType := "outage-placed-"+suffix, "outage-shipped-"+suffix
	queue := testenv.Name(t, "outage")

	mustExec := func(statement string) {
		t.Helper()
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	mustExec("CREATE TABLE " + orders + " (id int NOT NULL PRIMARY KEY, state varchar(16) NOT NULL DEFAULT 'placed')")
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, outboxTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(ddl) {
		mustExec(statement)
	}
	t.Cleanup(func() {
		// Registered after the restart's cleanup, so it runs before it: only
		// with MariaDB up again.
		_, _ = db.Exec("DROP TABLE IF EXISTS " + orders)
		_, _ = db.Exec("DROP TABLE IF EXISTS " + outboxTable)
	})
	values := make([]string, warm+waiting)
	for i := range values {
		values[i] = fmt.Sprintf("(%d)", i)
	}
	mustExec("INSERT INTO " + orders + " (id) VALUES " + strings.Join(values, ","))

	b := newBroker(t, url, queue)
	watch := queue + ".shipped"
	for _, step := range []error{
		b.ch.ExchangeDeclare(shippedType, "fanout", true, false, false, false, nil),
		func() error { _, err := b.ch.QueueDeclare(watch, true, false, false, false, nil); return err }(),
		b.ch.QueueBind(watch, "", shippedType, false, nil),
	} {
		if step != nil {
			t.Fatalf("declare the shipped topology: %v", step)
		}
	}
	t.Cleanup(func() {
		_, _ = b.ch.QueueDelete(watch, false, false, false)
		_ = b.ch.ExchangeDelete(shippedType, false, false)
	})
	place := func(from, to int) {
		for id := from; id < to; id++ {
			body, _ := json.Marshal(placedOrder{OrderID: id})
			b.publishRaw(queue, amqp.Publishing{
				Headers:     amqp.Table{"x-acemq-type": placedType, "x-acemq-id": fmt.Sprintf("placed-%d", id)},
				ContentType: "application/json", Body: body,
			})
		}
	}

	// The stack, as cmd/orders composes it.
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	outbox, dispatcher := sqlmq.New(transport, sqlmq.Options.StorageHandle(db), sqlmq.Options.Table(outboxTable), sqlmq.Options.Logger(quiet))
	readTypes := map[string]reflect.Type{placedType: reflect.TypeOf(placedOrder{})}
	writeTypes := map[reflect.Type]string{reflect.TypeOf(shippedOrder{}): shippedType}
	encodedTransport := serialization.New(transport, serialization.Options.ReadTypes(readTypes), serialization.Options.Logger(quiet))
	encodedOutbox := serialization.New(outbox, serialization.Options.WriteTypes(writeTypes), serialization.Options.Logger(quiet))
	var deadLettered, held atomic.Int64
	monitor := countingMonitor{deadLettered: &deadLettered, held: &held}
	shipper := New(transport,
		retry.New(
			transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
				return shipOrders{tx: state.Tx, writer: state.Writer, table: orders}
			}),
			retry.Options.Backoff(100*time.Millisecond),
			retry.Options.MaxBackoff(2*time.Second),
			retry.Options.MaxAttempts(attempts),
			retry.Options.Logger(quiet),
		),
		Options.MaxAttempts(attempts),
		Options.Monitor(monitor),
		Options.Logger(quiet),
	)
	consumer := streaming.New(encodedTransport,
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.AddWorkers(shipper, shipper),
			streaming.SubscriptionOptions.BufferCapacity(64),
			streaming.SubscriptionOptions.BatchCapacity(16),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.ReconnectDelay(time.Second),
		)),
		streaming.Options.Logger(quiet),
	)
	done := make(chan struct{}, 2)
	go func() { dispatcher.Listen(); done <- struct{}{} }()
	go func() { consumer.Listen(); done <- struct{}{} }()
	t.Cleanup(func() {
		_ = consumer.Close()
		_ = dispatcher.Close()
		for range 2 {
			ReceiveWithin(t, done, 30*time.Second, "Listen to return after Close")
		}
	})

	shipped := func() int {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + orders + " WHERE state = 'shipped'").Scan(&n); err != nil {
			return -1
		}
		return n
	}
	// Warm up: pooled connections exist when MariaDB goes, so batches in
	// flight meet dead connections, not only refused new ones.
	place(0, warm)
	waitUntil(t, 30*time.Second, "the warm-up orders to ship", func() bool { return shipped() == warm })

	stopMariaDB(t)
	stopped := time.Now()
	place(warm, warm+waiting)
	sawWaiting := false
	for time.Since(stopped) < *outageLength {
		if len(consumer.Waiting()) > 0 {
			sawWaiting = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !sawWaiting {
		t.Errorf("MariaDB was down %s and the consumer never reported a subscription waiting on an outage", *outageLength)
	}
	if err := consumer.Health(); err == nil || !strings.Contains(err.Error(), queue) {
		t.Errorf("Health during the outage = %v; want the waiting stream named", err)
	}
	startMariaDB(t)
	restarted := time.Now()

	for deadline := time.Now().Add(2 * time.Minute); shipped() != warm+waiting; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("2 min after MariaDB returned, %d of %d orders shipped and %d messages were dead-lettered; want all shipped and none dead-lettered",
				shipped(), warm+waiting, deadLettered.Load())
		}
	}
	recovery := time.Since(restarted)
	waitUntil(t, 30*time.Second, "every order-shipped message to be published", func() bool { return b.depth(watch) == warm+waiting })
	waitUntil(t, 10*time.Second, "the subscription to stop waiting", func() bool { return len(consumer.Waiting()) == 0 })

	if n := deadLettered.Load(); n != 0 {
		t.Fatalf("%d messages were dead-lettered during a database outage; want 0", n)
	}
	for _, target := range []string{queue + ".dlq", queue + ".parked", queue} {
		if depth := b.depth(target); depth != 0 {
			t.Fatalf("%s holds %d messages; want 0", target, depth)
		}
	}
	t.Logf("MariaDB down %s with %d messages waiting: 0 dead-lettered, %d held-for-outage reports, all %d shipped %s after it returned",
		outageLength.Round(time.Second), waiting, held.Load(), warm+waiting, recovery.Round(100*time.Millisecond))
}

type shipOrders struct {
	tx     *sql.Tx
	writer messaging.Writer
	table  string
}

func (h shipOrders) Handle(ctx context.Context, messages ...any) {
	for _, message := range messages {
		placed := message.(placedOrder)
		if _, err := h.tx.ExecContext(ctx, "UPDATE "+h.table+" SET state = 'shipped' WHERE id = ?", placed.OrderID); err != nil {
			panic(err)
		}
		if _, err := h.writer.Write(ctx, messaging.Dispatch{Message: shippedOrder{OrderID: placed.OrderID}}); err != nil {
			panic(err)
		}
	}
}

type countingMonitor struct{ deadLettered, held *atomic.Int64 }

func (m countingMonitor) Settled(_, action, _ string) {
	switch action {
	case ActionDeadLettered, ActionParked:
		m.deadLettered.Add(1)
	case ActionHeldForOutage:
		m.held.Add(1)
	}
}

func waitUntil(t *testing.T, within time.Duration, what string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopMariaDB stops the local server (the test holds DisruptDatabases) and
// registers its restart, so a failing test never leaves it down.
func stopMariaDB(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { startMariaDB(t) })
	if err := testenv.StopMariaDB(); err != nil {
		t.Fatal(err)
	}
}

// startMariaDB starts the local server if it is down and waits (bounded)
// until it answers.
func startMariaDB(t *testing.T) {
	t.Helper()
	if err := testenv.StartMariaDB(); err != nil {
		t.Fatal(err)
	}
}
