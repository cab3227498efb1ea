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
	"github.com/warrenmq/messaging/retrypolicy"
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
//
// It runs beside other tests that use the same services: the exclusive
// database lock is held only while MariaDB is stopped (the second step), the
// shared one around it, and what the consumer reports during the outage is
// observed through its monitor's events, not sampled at one instant.
func TestServicesADatabaseOutageDeadLettersNothing(t *testing.T) {
	const warm, waiting, attempts = 20, 300, 5
	url := testenv.Broker(t) // the broker lock first, then the database's: every test takes them in this order
	db := testenv.OpenMySQL(t)
	s := &outageScenario{t: t, db: db, queue: testenv.Name(t, "outage"), warm: warm, waiting: waiting}
	s.events = &consumerEvents{queue: s.queue, changed: make(chan struct{}, 1), outage: make(chan bool, 64)}

	t.Run("set up and warm up", func(t *testing.T) {
		testenv.MySQL(t) // shared: nobody stops MariaDB meanwhile
		s.setUp(t, url, attempts)
		// Warm up: pooled connections exist when MariaDB goes, so batches in
		// flight meet dead connections, not only refused new ones.
		s.place(0, warm)
		s.events.waitAcknowledged(t, warm, 30*time.Second)
	})
	if t.Failed() {
		return
	}
	t.Run("MariaDB stopped", func(t *testing.T) {
		testenv.DisruptDatabases(t) // exclusive, for as long as MariaDB is down
		stopMariaDB(t)
		stopped := time.Now()
		s.place(warm, warm+waiting)
		// The subscription reports the outage: its monitor hears
		// OutageStarted, and Health, asked at that moment, names the stream.
		named := s.events.waitOutage(t, *outageLength)
		if !named {
			t.Errorf("Health, asked when the subscription reported the outage, did not name stream %s", s.queue)
		}
		time.Sleep(time.Until(stopped.Add(*outageLength))) // the outage's length is the scenario: real time
		startMariaDB(t)
	})
	restarted := time.Now()
	t.Run("after MariaDB returned", func(t *testing.T) {
		testenv.MySQL(t)
		s.events.waitAcknowledged(t, warm+waiting, 2*time.Minute)
		recovery := time.Since(restarted)
		if got := s.shipped(); got != warm+waiting {
			t.Fatalf("every message was acknowledged but %d of %d orders are shipped", got, warm+waiting)
		}
		testenv.Eventually(t, 30*time.Second, "every order-shipped message to be published", func() bool { return s.broker.depth(s.watch) == warm+waiting })
		testenv.Eventually(t, 10*time.Second, "the subscription to stop waiting", func() bool { return len(s.consumer.Waiting()) == 0 })
		if n := s.settled.count(ActionDeadLettered) + s.settled.count(ActionParked); n != 0 {
			t.Fatalf("%d messages were dead-lettered during a database outage; want 0", n)
		}
		for _, target := range []string{s.queue + ".dlq", s.queue + ".parked", s.queue} {
			if depth := s.broker.depth(target); depth != 0 {
				t.Fatalf("%s holds %d messages; want 0", target, depth)
			}
		}
		t.Logf("MariaDB down %s with %d messages waiting: 0 dead-lettered, %d held-for-outage reports, all %d shipped %s after it returned",
			outageLength.Round(time.Second), waiting, s.settled.count(ActionHeldForOutage), warm+waiting, recovery.Round(100*time.Millisecond))
	})
}

// outageScenario is the service of TestServicesADatabaseOutageDeadLettersNothing.
type outageScenario struct {
	t             *testing.T
	db            *sql.DB
	broker        *broker
	queue, watch  string
	orders        string
	placedType    string
	warm, waiting int
	consumer      *streaming.Consumer
	events        *consumerEvents
	settled       settlements
}

// setUp creates the tables and the topology and starts the stack, as
// cmd/orders composes it; the parent test's cleanup stops it.
func (s *outageScenario) setUp(t *testing.T, url string, attempts int) {
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	outboxTable := "outage_outbox_" + suffix
	s.orders, s.placedType = "outage_orders_"+suffix, "outage-placed-"+suffix
	shippedType := "outage-shipped-" + suffix
	mustExec := func(statement string) {
		t.Helper()
		if _, err := s.db.Exec(statement); err != nil {
			t.Fatalf("%s: %v", statement, err)
		}
	}
	mustExec("CREATE TABLE " + s.orders + " (id int NOT NULL PRIMARY KEY, state varchar(16) NOT NULL DEFAULT 'placed')")
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, outboxTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(ddl) {
		mustExec(statement)
	}
	s.t.Cleanup(func() {
		_, _ = s.db.Exec("DROP TABLE IF EXISTS " + s.orders)
		_, _ = s.db.Exec("DROP TABLE IF EXISTS " + outboxTable)
	})
	values := make([]string, s.warm+s.waiting)
	for i := range values {
		values[i] = fmt.Sprintf("(%d)", i)
	}
	mustExec("INSERT INTO " + s.orders + " (id) VALUES " + strings.Join(values, ","))

	s.broker = newBroker(s.t, url, s.queue)
	s.watch = s.queue + ".shipped"
	b := s.broker
	for _, step := range []error{
		b.ch.ExchangeDeclare(shippedType, "fanout", true, false, false, false, nil),
		func() error { _, err := b.ch.QueueDeclare(s.watch, true, false, false, false, nil); return err }(),
		b.ch.QueueBind(s.watch, "", shippedType, false, nil),
	} {
		if step != nil {
			t.Fatalf("declare the shipped topology: %v", step)
		}
	}
	s.t.Cleanup(func() {
		_, _ = b.ch.QueueDelete(s.watch, false, false, false)
		_ = b.ch.ExchangeDelete(shippedType, false, false)
	})
	s.start(url, outboxTable, shippedType, attempts)
}

// start runs the stack: deadletter(retry(transactional(outbox))) under the
// streaming runtime, and the outbox's dispatcher.
func (s *outageScenario) start(url, outboxTable, shippedType string, attempts int) {
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	s.t.Cleanup(func() { _ = transport.Close() })
	outbox, dispatcher := sqlmq.New(transport, sqlmq.Options.StorageHandle(s.db), sqlmq.Options.Table(outboxTable), sqlmq.Options.Logger(quiet))
	readTypes := map[string]reflect.Type{s.placedType: reflect.TypeOf(placedOrder{})}
	writeTypes := map[reflect.Type]string{reflect.TypeOf(shippedOrder{}): shippedType}
	encodedTransport := serialization.New(transport, serialization.Options.ReadTypes(readTypes), serialization.Options.Logger(quiet))
	encodedOutbox := serialization.New(outbox, serialization.Options.WriteTypes(writeTypes), serialization.Options.Logger(quiet))
	budget := retrypolicy.Exponential(attempts, 100*time.Millisecond, 2*time.Second)
	shipper := New(transport,
		retry.New(
			transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
				return shipOrders{tx: state.Tx, writer: state.Writer, table: s.orders}
			}),
			retry.Options.Policy(budget),
			retry.Options.Logger(quiet),
		),
		Options.Policy(budget),
		Options.Monitor(&s.settled),
		Options.Logger(quiet),
	)
	s.consumer = streaming.New(encodedTransport,
		streaming.Options.Subscriptions(streaming.NewSubscription(s.queue,
			streaming.SubscriptionOptions.AddWorkers(shipper, shipper),
			streaming.SubscriptionOptions.BufferCapacity(64),
			streaming.SubscriptionOptions.BatchCapacity(16),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.ReconnectDelay(time.Second),
		)),
		streaming.Options.Monitor(s.events),
		streaming.Options.Logger(quiet),
	)
	s.events.health = s.consumer.Health
	done := make(chan struct{}, 2)
	go func() { dispatcher.Listen(); done <- struct{}{} }()
	go func() { s.consumer.Listen(); done <- struct{}{} }()
	s.t.Cleanup(func() {
		_ = s.consumer.Close()
		_ = dispatcher.Close()
		for range 2 {
			ReceiveWithin(s.t, done, 30*time.Second, "Listen to return after Close")
		}
	})
}

func (s *outageScenario) place(from, to int) {
	for id := from; id < to; id++ {
		body, _ := json.Marshal(placedOrder{OrderID: id})
		s.broker.publishRaw(s.queue, amqp.Publishing{
			Headers:     amqp.Table{"x-acemq-type": s.placedType, "x-acemq-id": fmt.Sprintf("placed-%d", id)},
			ContentType: "application/json", Body: body,
		})
	}
}

func (s *outageScenario) shipped() int {
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM " + s.orders + " WHERE state = 'shipped'").Scan(&n); err != nil {
		return -1
	}
	return n
}

// consumerEvents hears the runtime of one stream: each outage it reports
// (with whether Health named the stream when asked at that moment) and each
// batch it acknowledged.
type consumerEvents struct {
	streaming.NopMonitor
	queue  string
	health func() error
	outage chan bool
	// acked is the deliveries acknowledged so far; changed signals a change.
	acked   atomic.Int64
	changed chan struct{}
}

func (e *consumerEvents) OutageStarted(stream string, _ error) {
	if stream != e.queue || e.health == nil {
		return
	}
	err := e.health()
	select {
	case e.outage <- err != nil && strings.Contains(err.Error(), e.queue):
	default:
	}
}

func (e *consumerEvents) BatchAcknowledged(stream string, count int, err error) {
	if stream == e.queue && err == nil {
		e.acked.Add(int64(count))
		select {
		case e.changed <- struct{}{}:
		default:
		}
	}
}

// waitOutage waits, at most within, for the subscription to report an
// outage, and returns whether Health named the stream then.
func (e *consumerEvents) waitOutage(t *testing.T, within time.Duration) bool {
	t.Helper()
	select {
	case named := <-e.outage:
		return named
	case <-time.After(within):
		t.Fatalf("MariaDB was down %s and the consumer never reported a subscription waiting on an outage (Monitor.OutageStarted)", within)
		return false
	}
}

// waitAcknowledged waits, at most within, until the runtime has
// acknowledged n deliveries in all.
func (e *consumerEvents) waitAcknowledged(t *testing.T, n int, within time.Duration) {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for e.acked.Load() < int64(n) {
		select {
		case <-e.changed:
		case <-timer.C:
			t.Fatalf("waited %s for %d deliveries to be acknowledged; %d were", within, n, e.acked.Load())
		}
	}
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
