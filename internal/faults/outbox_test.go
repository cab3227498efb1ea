package faults

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// outboxPerTransaction is how many messages each committed transaction carries.
const outboxPerTransaction = 1

// Scenario 2a: commit N messages through the outbox, in MariaDB transactions,
// with the relay running, while every broker connection is closed repeatedly.
func TestFaultOutboxWhileConnectionsClose(t *testing.T) {
	url := testenv.Disrupt(t)
	admin := testenv.MySQL(t)
	interval := size(time.Second, 2*time.Second)
	var closer *disruptor
	outboxScenario(t, "outbox-close-connections", url, admin, func(progress func() int) {
		closer = every(interval, closeAllConnections)
	}, func(int64) {
		runs := stopDisruptor(t, closer)
		t.Logf("close_all_connections ran %d time(s)", runs)
	})
}

// Scenario 2b: the same while MariaDB is restarted once, a third of the way in.
func TestFaultOutboxWhileDatabaseRestarts(t *testing.T) {
	url := testenv.Broker(t)
	testenv.DisruptDatabases(t)
	admin := testenv.OpenMySQL(t)
	var wg sync.WaitGroup
	var restartErr error
	outboxScenario(t, "outbox-database-restart", url, admin, func(progress func() int) {
		third := size(2_000, 20_000) / 3
		wg.Add(1)
		go func() {
			defer wg.Done()
			testenv.Poll(2*time.Minute, func() bool { return progress() >= third })
			restartErr = restartMariaDB()
		}()
	}, func(failed int64) {
		wg.Wait()
		if restartErr != nil {
			t.Fatalf("restart MariaDB: %v", restartErr)
		}
		if failed == 0 {
			t.Errorf("no commit failed while MariaDB restarted; the restart missed the commits and the scenario proved nothing")
		}
	})
}

// outboxScenario commits N messages through serialization over the sqlmq
// outbox over RabbitMQ, with the relay running, calling disturb once committing
// has begun and settle (with the number of messages whose commit failed) once
// it has ended; then it waits for the relay to
// publish every committed row, counts what reached the queue bound to the
// exchange, and checks goroutines and connections. Commits that returned an
// error count as not confirmed.
func outboxScenario(t *testing.T, scenario, url string, admin *sql.DB, disturb func(progress func() int), settle func(failedCommits int64)) {
	t.Helper()
	n := size(2_000, 20_000)
	queue := testenv.Name(t, "outbox")
	exchange := testenv.Name(t, "outbox-ex")
	declareQueue(t, url, queue, exchange)
	admin.SetMaxOpenConns(1)
	table := outboxTable(t, admin)
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
	outbox, relay := sqlmq.New(transportConnector,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Dialect(sqldialect.MySQL),
		sqlmq.Options.Table(table),
		sqlmq.Options.RetryDelay(250*time.Millisecond),
		sqlmq.Options.LeaseTimeout(5*time.Second),
		sqlmq.Options.Logger(logger(t)),
	)
	connector := serialization.New(outbox,
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(faultMessage{}): faultMessageType}))
	listening := make(chan struct{})
	go func() { defer close(listening); relay.Listen() }()

	var committed, failed atomic.Int64
	progress := func() int { return int(committed.Load() + failed.Load()) }
	chunks := make(chan []string)
	var committers sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	// Committing is paced like a service's real work, so that it spans several
	// disruptions instead of finishing before the first.
	pace := size(3*time.Millisecond, 2*time.Millisecond)
	for range 2 {
		committers.Add(1)
		go func() {
			defer committers.Done()
			for chunk := range chunks {
				work(pace)
				tl.send(chunk...)
				if err := commitOutbox(connector, exchange, chunk); err != nil {
					failed.Add(int64(len(chunk)))
					errOnce.Do(func() { firstErr = err })
					continue
				}
				committed.Add(int64(len(chunk)))
				tl.confirm(chunk...)
			}
		}()
	}
	disturb(progress)
	all := ids(n)
	for start := 0; start < n; start += outboxPerTransaction {
		chunks <- all[start:min(start+outboxPerTransaction, n)]
	}
	close(chunks)
	committers.Wait()
	settle(failed.Load())
	t.Logf("%d message(s) committed, %d in transactions that failed (the first: %v)", committed.Load(), failed.Load(), firstErr)

	pending := func() int {
		var count int
		query := fmt.Sprintf("SELECT COUNT(*) FROM %s WHERE dispatched_us IS NULL", table)
		if err := admin.QueryRow(query).Scan(&count); err != nil {
			return -1
		}
		return count
	}
	if !testenv.Poll(size(time.Minute, 5*time.Minute), func() bool { return pending() == 0 }) {
		t.Errorf("the relay left %d row(s) undispatched within the bound", pending())
	}
	if err := relay.Close(); err != nil {
		t.Errorf("close the relay: %v", err)
	}
	select {
	case <-listening:
	case <-time.After(time.Minute):
		t.Fatalf("the relay's Listen did not return within a minute of Close")
	}
	if err := connector.Close(); err != nil {
		t.Errorf("close the outbox connector: %v", err)
	}
	if err := transportConnector.Close(); err != nil {
		t.Logf("close the transport: %v", err)
	}
	_ = db.Close()
	drain(t, url, queue, tl)
	report(t, scenario, tl, started)
	base.check(t)
}

// commitOutbox commits one transaction carrying a message per id.
func commitOutbox(connector messaging.Connector, exchange string, chunk []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connection, err := connector.Connect(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = connection.Close() }()
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		return err
	}
	if _, err := writer.Write(ctx, dispatches(exchange, chunk)...); err != nil {
		_ = writer.Rollback()
		return err
	}
	return writer.Commit()
}

// outboxTable creates a per-test outbox table from sqlmq's schema and drops it
// when the test ends.
func outboxTable(t *testing.T, admin *sql.DB) string {
	t.Helper()
	table := "fault_" + messaging.NewID()[:8]
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, table)
	if err != nil {
		t.Fatalf("outbox schema: %v", err)
	}
	if _, err := admin.Exec(ddl); err != nil {
		t.Fatalf("create the outbox table %s: %v", table, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP TABLE " + table); err != nil {
			t.Errorf("drop the outbox table %s: %v", table, err)
		}
	})
	return table
}

// restartMariaDB stops the server, starts it again and waits (bounded) until it
// answers.
func restartMariaDB() error {
	if err := stopMariaDB(); err != nil {
		return err
	}
	return startMariaDB()
}

// stopMariaDB and startMariaDB are testenv's, for the scenarios' brevity.
var (
	stopMariaDB  = testenv.StopMariaDB
	startMariaDB = testenv.StartMariaDB
)
