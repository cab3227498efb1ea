package faults

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// settleAttempts is the retry budget of the scenarios that run the settlement
// decorator, as cmd/orders sets it.
const settleAttempts = 5

// Scenario 6: messages are consumed through the whole transactional stack
// (rabbitmq -> sqlmq outbox -> serialization -> transactional -> retry ->
// deadletter -> streaming, as cmd/orders composes it), the handler writing each
// message's id into a MariaDB table inside the batch's transaction, while
// MariaDB is stopped for 45 s (short: 8 s) and started again. Every id must be
// committed in the table, nothing may be dead-lettered or parked, and the
// consumer's Health must report the wait while MariaDB is down.
func TestFaultConsumeWhileDatabaseIsDown(t *testing.T) {
	url := testenv.Broker(t)
	testenv.DisruptDatabases(t)
	admin := testenv.OpenMySQL(t)
	admin.SetMaxOpenConns(1)
	n := size(300, 3_000)
	warm := n / 10
	down := size(8*time.Second, 45*time.Second)
	queue := testenv.Name(t, "dboutage")
	exchange := testenv.Name(t, "dboutage-ex")
	declareQueue(t, url, queue, exchange)
	declareSetAside(t, url, queue)
	outbox := outboxTable(t, admin)
	handledTable := handledIDsTable(t, admin)
	t.Cleanup(func() {
		// Registered after the tables' cleanups, so it runs before them: a
		// test that failed with MariaDB down drops them once it is back.
		if err := startMariaDB(); err != nil {
			t.Errorf("restore MariaDB: %v", err)
		}
	})
	connName := testenv.Name(t, "conn")
	base := takeBaseline(t, connName)
	started := time.Now()
	tl := newTally()

	db, err := sql.Open("mysql", testenv.MySQLDSN)
	if err != nil {
		t.Fatalf("open MariaDB: %v", err)
	}
	defer func() { _ = db.Close() }()
	transportConnector := transport(t, url, connName)
	outboxConnector, relay := sqlmq.New(transportConnector,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Dialect(sqldialect.MySQL),
		sqlmq.Options.Table(outbox),
		sqlmq.Options.RetryDelay(250*time.Millisecond),
		sqlmq.Options.Logger(quietLogger()),
	)
	encodedTransport := serialization.New(transportConnector,
		serialization.Options.ReadTypes(map[string]reflect.Type{faultMessageType: reflect.TypeOf(faultMessage{})}))
	encodedOutbox := serialization.New(outboxConnector)
	settled := &settleCounter{}
	handler := deadletter.New(transportConnector,
		retry.New(
			transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
				return recordIDs{tx: state.Tx, table: handledTable}
			}),
			retry.Options.Policy(retrypolicy.Exponential(settleAttempts, 100*time.Millisecond, 2*time.Second)),
			// The default (30 s) would leave the batch asleep for up to 30 s
			// after MariaDB answers again; a second bounds the recovery.
			retry.Options.MaxOutageBackoff(time.Second),
			retry.Options.LogStackTrace(false),
			retry.Options.Logger(quietLogger()),
		),
		deadletter.Options.Policy(retrypolicy.Fixed(settleAttempts, 0)),
		deadletter.Options.Monitor(settled),
		deadletter.Options.Logger(logger(t)),
	)
	consumer := streaming.New(encodedTransport,
		streaming.Options.Logger(quietLogger()),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.AddWorkers(handler, handler),
			streaming.SubscriptionOptions.EstablishTopology(false),
			streaming.SubscriptionOptions.BufferCapacity(200),
			streaming.SubscriptionOptions.BatchCapacity(50),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.ReconnectDelay(100*time.Millisecond),
		)))
	var listeners sync.WaitGroup
	listeners.Add(2)
	go func() { defer listeners.Done(); relay.Listen() }()
	go func() { defer listeners.Done(); consumer.Listen() }()

	committed := func() int {
		var count int
		if err := admin.QueryRow("SELECT COUNT(DISTINCT id) FROM " + handledTable).Scan(&count); err != nil {
			return -1
		}
		return count
	}
	all := ids(n)
	// Warm up: the pools hold live connections when MariaDB goes, so batches
	// in flight meet dead connections, not only refused new ones.
	publishAll(t, url, connName, exchange, all[:warm], tl)
	if !testenv.Poll(30*time.Second, func() bool { return committed() == warm }) {
		t.Fatalf("the %d warm-up messages were not handled within 30 s (%d were)", warm, committed())
	}

	if err := stopMariaDB(); err != nil {
		t.Fatalf("stop MariaDB: %v", err)
	}
	stopped := time.Now()
	publishAll(t, url, connName, exchange, all[warm:], tl)
	var health error
	waited := false
	for time.Since(stopped) < down {
		if len(consumer.Waiting()) > 0 {
			waited = true
			if err := consumer.Health(); err != nil {
				health = err
			}
		}
		time.Sleep(100 * time.Millisecond) // real time: the outage lasts down; the subscription is sampled meanwhile
	}
	restarted := time.Now()
	if err := startMariaDB(); err != nil {
		t.Fatalf("start MariaDB: %v", err)
	}
	done := testenv.Poll(size(time.Minute, 3*time.Minute), func() bool { return committed() == n })
	recovered := time.Since(restarted)
	if !testenv.Poll(15*time.Second, func() bool { return len(consumer.Waiting()) == 0 }) {
		t.Errorf("the subscription still reported waiting on an outage 15 s after every message was handled: %v", consumer.Health())
	}

	if err := consumer.Close(); err != nil {
		t.Errorf("close the consumer: %v", err)
	}
	if err := relay.Close(); err != nil {
		t.Errorf("close the relay: %v", err)
	}
	waitGroup(t, &listeners, 30*time.Second, "Listen (consumer and relay) to return after Close")
	if err := encodedOutbox.Close(); err != nil {
		t.Logf("close the outbox connector: %v", err)
	}
	if err := encodedTransport.Close(); err != nil {
		t.Errorf("close the connector: %v", err)
	}
	if err := transportConnector.Close(); err != nil {
		t.Logf("close the transport: %v", err)
	}
	_ = db.Close()

	countRows(t, admin, handledTable, tl)
	if !done {
		t.Errorf("not every message was committed within the bound after MariaDB returned; %d missing", tl.missing())
	}
	if !waited {
		t.Errorf("MariaDB was down %s and Consumer.Waiting never listed the subscription", down)
	}
	if health == nil || !errors.Is(health, streaming.ErrWaitingOnOutage) || !strings.Contains(health.Error(), queue) {
		t.Errorf("Consumer.Health during the outage = %v; want ErrWaitingOnOutage naming %s", health, queue)
	}
	t.Logf("MariaDB down %s with %d messages published meanwhile; every message committed %s after it was started again; Health said: %v",
		down, n-warm, recovered.Round(100*time.Millisecond), health)
	t.Logf("settlement: %d held for the outage, %d dead-lettered, %d parked, %d failed republishes",
		settled.held.Load(), settled.deadLettered.Load(), settled.parked.Load(), settled.failed.Load())

	aside := drainSetAside(t, url, queue)
	report(t, "database-outage", tl, started)
	r := aside.against(nil)
	reportSetAside("database-outage", aside, r)
	if dlq, parked := aside.copies(); dlq+parked > 0 || settled.deadLettered.Load()+settled.parked.Load() > 0 {
		t.Errorf("database-outage: %d message(s) dead-lettered and %d parked (the monitor counted %d and %d) during a database outage; want none (the first: %s)",
			dlq, parked, settled.deadLettered.Load(), settled.parked.Load(), shortIDs(r.misplaced))
	}
	base.check(t)
}

// recordIDs inserts each message's id into its table, in the batch's
// transaction.
type recordIDs struct {
	tx    *sql.Tx
	table string
}

func (h recordIDs) Handle(ctx context.Context, messages ...any) {
	rows := make([]string, 0, len(messages))
	args := make([]any, 0, len(messages))
	for _, m := range messages {
		message, ok := m.(faultMessage)
		if !ok {
			panic(messaging.Fatalf("fault suite: handed %T, want faultMessage", m))
		}
		rows = append(rows, "(?)")
		args = append(args, message.ID)
	}
	if _, err := h.tx.ExecContext(ctx, "INSERT INTO "+h.table+" (id) VALUES "+strings.Join(rows, ","), args...); err != nil {
		panic(fmt.Errorf("fault suite: record %d id(s): %w", len(messages), err))
	}
}

// handledIDsTable creates a per-test table of handled ids (one row per
// commit, so a redelivered batch shows as duplicates) and drops it when the
// test ends.
func handledIDsTable(t *testing.T, admin *sql.DB) string {
	t.Helper()
	table := "fault_handled_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	if _, err := admin.Exec("CREATE TABLE " + table + " (seq bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, id varchar(64) NOT NULL, KEY (id))"); err != nil {
		t.Fatalf("create the table %s: %v", table, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP TABLE " + table); err != nil {
			t.Errorf("drop the table %s: %v", table, err)
		}
	})
	return table
}

// countRows counts every row of table as one handling of its id.
func countRows(t *testing.T, admin *sql.DB, table string, tl *tally) {
	t.Helper()
	rows, err := admin.Query("SELECT id FROM " + table)
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		tl.handle(id)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
}

// waitGroup waits (bounded) for wg, failing the test when it does not finish.
func waitGroup(t *testing.T, wg *sync.WaitGroup, bound time.Duration, what string) {
	t.Helper()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(bound):
		t.Fatalf("waited %s for %s", bound, what)
	}
}

// quietLogger drops the library's lines for the layers whose errors a
// scenario provokes on purpose (an outage, a poison message): they would
// drown the test log, and the scenario counts their outcomes instead.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
