package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" driver, for MariaDB
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// outboxDrainLimit bounds the wait, after the last commit, for the broker to
// hold every committed message.
const outboxDrainLimit = time.Minute

// outboxScenario: messages committed in MariaDB transactions through the sqlmq
// outbox, its dispatcher publishing them, against the same work done by hand:
// the plain baselines (publish after each commit; a bare insert) and the
// strong one (a hand-written relay running beside the commits, one multi-row
// INSERT per transaction). The tables live for one run of the bench and are
// dropped at its end.
func outboxScenario(s settings) scenario {
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	tables := outboxTables{outbox: "bench_outbox_" + suffix, plain: "bench_plain_" + suffix, strong: "bench_strong_" + suffix}
	outboxTable, plainTable, strongTable := tables.outbox, tables.plain, tables.strong
	body := make([]byte, s.size)
	var db *sql.DB // opened by setup, before any side runs
	setup := tables.setup(s.dsn, &db)
	// rounds keeps every run of the outbox sides, for the medians.
	rounds := map[string][]outboxRun{}
	kept := func(name string, r func(ctx context.Context, queue string) (outboxRun, error)) run {
		return func(ctx context.Context, queue string) (measurement, error) {
			m, err := r(ctx, queue)
			if err == nil {
				rounds[name] = append(rounds[name], m)
			}
			return m.measurement, err
		}
	}
	plain := func(name string, r run) run {
		return kept(name, func(ctx context.Context, queue string) (outboxRun, error) {
			m, err := r(ctx, queue)
			return outboxRun{measurement: m, commitRate: m.rate()}, err
		})
	}
	return scenario{
		name:  "outbox",
		setup: setup,
		sides: []side{
			{name: "raw-100", run: plain("raw-100", func(ctx context.Context, queue string) (measurement, error) {
				return rawOutbox(ctx, s, db, plainTable, queue, body)
			})},
			{name: "strong-100", run: kept("strong-100", func(ctx context.Context, queue string) (outboxRun, error) {
				return strongOutbox(ctx, s, db, strongTable, queue, body, 100, false)
			})},
			{name: "strong+env-100", run: kept("strong+env-100", func(ctx context.Context, queue string) (outboxRun, error) {
				return strongOutbox(ctx, s, db, strongTable, queue, body, 100, true)
			})},
			{name: "ours-100", baseline: "strong-100", run: kept("ours-100", func(ctx context.Context, queue string) (outboxRun, error) {
				return oursOutbox(ctx, s, db, outboxTable, queue, body, 100)
			})},
			{name: "raw-insert-1", run: plain("raw-insert-1", func(ctx context.Context, queue string) (measurement, error) {
				return rawInserts(ctx, s, db, plainTable, body)
			})},
			{name: "strong-1", baseline: "raw-insert-1", run: kept("strong-1", func(ctx context.Context, queue string) (outboxRun, error) {
				return strongOutbox(ctx, s, db, strongTable, queue, body, 1, false)
			})},
			{name: "ours-1", baseline: "raw-insert-1", run: kept("ours-1", func(ctx context.Context, queue string) (outboxRun, error) {
				return oursOutbox(ctx, s, db, outboxTable, queue, body, 1)
			})},
		},
		report: func(totals []measurement) {
			fmt.Printf("# outbox/ours-1: the broker held the last message %s after the last commit (worst of %d rounds); the dispatcher published %.1f messages per batch on average (ours-100: %.1f)\n",
				totals[6].lag.Round(time.Millisecond), s.rounds, perBatch(totals[6]), perBatch(totals[3]))
			reportOutboxMedians(rounds)
		},
	}
}

// outboxTables are the outbox scenario's tables, named for one run of the bench.
type outboxTables struct{ outbox, plain, strong string }

// setup returns the scenario's setup: it holds the database lock shared (so
// no fault test restarts MariaDB under the bench), opens the database into
// *db and creates the tables; what it returns drops them, closes the
// database and releases the lock.
func (t outboxTables) setup(dsn string, db **sql.DB) func(ctx context.Context) (func(), error) {
	return func(ctx context.Context) (func(), error) {
		release, err := shareLock(databaseLockPath)
		if err != nil {
			return nil, err
		}
		opened, err := openDatabase(ctx, dsn)
		if err != nil {
			release()
			return nil, err
		}
		teardown := func() {
			dropTables(opened, t.outbox, t.plain, t.strong)
			_ = opened.Close()
			release()
		}
		err = createTables(ctx, opened, t.outbox, t.plain)
		if err == nil {
			err = createStrongTable(ctx, opened, t.strong)
		}
		if err != nil {
			teardown()
			return nil, err
		}
		*db = opened
		return teardown, nil
	}
}

// reportOutboxMedians prints, from each round's runs, the median of the
// per-round ratios (each round's sides ran back to back, so a noisy neighbour
// weighs on both), the median commit rates and the median tails.
func reportOutboxMedians(rounds map[string][]outboxRun) {
	ratio := func(side, baseline string, rate func(outboxRun) float64) string {
		a, b := rounds[side], rounds[baseline]
		var ratios []float64
		for i := range min(len(a), len(b)) {
			if r := rate(b[i]); r > 0 {
				ratios = append(ratios, rate(a[i])/r)
			}
		}
		return fmt.Sprintf("%s/%s %.2f", side, baseline, median(ratios))
	}
	delivered := func(r outboxRun) float64 { return r.rate() }
	committing := func(r outboxRun) float64 { return r.commitRate }
	fmt.Printf("# outbox medians of %d rounds, delivered msgs/s: %s, %s, %s, %s, %s\n", len(rounds["ours-100"]),
		ratio("ours-100", "strong-100", delivered), ratio("ours-100", "strong+env-100", delivered), ratio("strong+env-100", "strong-100", delivered),
		ratio("ours-100", "raw-100", delivered), ratio("strong-100", "raw-100", delivered))
	fmt.Printf("# outbox medians, commits/s at 1 per transaction: %s, %s\n",
		ratio("ours-1", "raw-insert-1", committing), ratio("strong-1", "raw-insert-1", committing))
	var rates, tails []string
	for _, name := range []string{"strong-100", "strong+env-100", "ours-100", "strong-1", "ours-1"} {
		var commit, tail []float64
		for _, r := range rounds[name] {
			commit = append(commit, r.commitRate)
			tail = append(tail, float64(r.tail))
		}
		rates = append(rates, fmt.Sprintf("%s %.0f", name, median(commit)))
		tails = append(tails, fmt.Sprintf("%s %s", name, time.Duration(median(tail)).Round(time.Millisecond)))
	}
	fmt.Printf("# outbox medians, messages committed per second: %s\n", strings.Join(rates, ", "))
	fmt.Printf("# outbox medians, the broker held the last message after the last commit: %s\n", strings.Join(tails, ", "))
}

func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	if n := len(sorted); n%2 == 0 {
		return (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return sorted[len(sorted)/2]
}

func perBatch(m measurement) float64 {
	if m.batches == 0 {
		return 0
	}
	return float64(m.msgs) / float64(m.batches)
}

func openDatabase(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, fmt.Errorf("the -dsn data source is not valid for the mysql driver: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cannot reach MariaDB at the -dsn data source: %w; `make services` starts it", err)
	}
	return db, nil
}

// createTables creates the outbox table (sqlmq's own schema) and a plain table
// for the raw side: an id, a message id and the payload.
func createTables(ctx context.Context, db *sql.DB, outboxTable, plainTable string) error {
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, outboxTable)
	if err != nil {
		return fmt.Errorf("outbox schema: %w", err)
	}
	statements := append(sqlmq.Statements(ddl),
		"CREATE TABLE "+plainTable+" (id bigint unsigned AUTO_INCREMENT NOT NULL PRIMARY KEY, message_id varchar(255) NOT NULL, payload longblob NOT NULL)")
	for _, statement := range statements {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			return fmt.Errorf("create the bench tables (does the -dsn user have CREATE rights?): %w", err)
		}
	}
	return nil
}

func dropTables(db *sql.DB, tables ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, table := range tables {
		_, _ = db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table)
	}
}

func truncate(ctx context.Context, db *sql.DB, table string) error {
	if _, err := db.ExecContext(ctx, "TRUNCATE TABLE "+table); err != nil {
		return fmt.Errorf("empty table %s between runs: %w", table, err)
	}
	return nil
}

// benchTx is the transaction both sides commit in: sqlmq's default isolation.
var benchTx = &sql.TxOptions{Isolation: sqlmq.DefaultIsolationLevel}

// rawInserts is the committing service without an outbox: begin, insert one
// row, commit, for the run's duration. It counts commits.
func rawInserts(ctx context.Context, s settings, db *sql.DB, table string, body []byte) (measurement, error) {
	if err := truncate(ctx, db, table); err != nil {
		return measurement{}, err
	}
	insert := "INSERT INTO " + table + " (message_id, payload) VALUES (?, ?)"
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	commits := 0
	for time.Now().Before(deadline) {
		tx, err := db.BeginTx(ctx, benchTx)
		if err != nil {
			return watch.stop(commits), fmt.Errorf("raw insert: begin: %w", err)
		}
		if _, err := tx.ExecContext(ctx, insert, messaging.NewID(), body); err != nil {
			_ = tx.Rollback()
			return watch.stop(commits), fmt.Errorf("raw insert: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return watch.stop(commits), fmt.Errorf("raw insert: commit: %w", err)
		}
		commits++
	}
	return watch.stop(commits), nil
}

// rawOutbox is an outbox written by hand with no durability between commit and
// publish: begin, insert 100 rows, commit, publish the 100 with pipelined
// confirms and wait for them, for the run's duration.
func rawOutbox(ctx context.Context, s settings, db *sql.DB, table, queue string, body []byte) (measurement, error) {
	const perTx = 100
	if err := truncate(ctx, db, table); err != nil {
		return measurement{}, err
	}
	conn, err := amqp.Dial(s.url)
	if err != nil {
		return measurement{}, fmt.Errorf("raw outbox: cannot reach RabbitMQ: %w; `make services` starts it", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return measurement{}, fmt.Errorf("raw outbox: channel: %w", err)
	}
	if err := ch.Confirm(false); err != nil {
		return measurement{}, fmt.Errorf("raw outbox: confirm mode: %w", err)
	}
	insert := "INSERT INTO " + table + " (message_id, payload) VALUES (?, ?)"
	ids := make([]string, perTx)
	pending := make([]*amqp.DeferredConfirmation, 0, perTx)
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	confirmed := 0
	for time.Now().Before(deadline) {
		if err := insertRows(ctx, db, insert, ids, body); err != nil {
			return watch.stop(confirmed), err
		}
		pending = pending[:0]
		for _, id := range ids {
			c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, true, false, amqp.Publishing{
				DeliveryMode: amqp.Persistent, ContentType: "application/octet-stream", MessageId: id, Body: body,
			})
			if err != nil {
				return watch.stop(confirmed), fmt.Errorf("raw outbox: publish: %w", err)
			}
			pending = append(pending, c)
		}
		for _, c := range pending {
			if err := waitConfirm(ctx, c); err != nil {
				return watch.stop(confirmed), fmt.Errorf("raw outbox: %w", err)
			}
			confirmed++
		}
	}
	return watch.stop(confirmed), nil
}

// insertRows inserts one row per id (fresh ids) in one transaction, with one
// prepared statement, as the outbox does.
func insertRows(ctx context.Context, db *sql.DB, insert string, ids []string, body []byte) error {
	tx, err := db.BeginTx(ctx, benchTx)
	if err != nil {
		return fmt.Errorf("raw outbox: begin: %w", err)
	}
	statement, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("raw outbox: prepare: %w", err)
	}
	for i := range ids {
		ids[i] = messaging.NewID()
		if _, err := statement.ExecContext(ctx, ids[i], body); err != nil {
			_ = statement.Close()
			_ = tx.Rollback()
			return fmt.Errorf("raw outbox: insert: %w", err)
		}
	}
	_ = statement.Close()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("raw outbox: commit: %w", err)
	}
	return nil
}

// waitConfirm waits, bounded, for the broker to confirm one publish.
func waitConfirm(ctx context.Context, c *amqp.DeferredConfirmation) error {
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ok, err := c.WaitContext(bounded)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted waiting for a confirm: %w", ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("no confirm within 30s (is the broker under a memory or disk alarm?): %w", err)
	}
	if !ok {
		return fmt.Errorf("the broker refused a publish (nack); see its log")
	}
	return nil
}

// oursOutbox commits perTx messages per transaction through the outbox for the
// run's duration, with the dispatcher running, then waits until the broker
// holds them all. With perTx 1 it reports commits per second and, as lag, how
// long after the last commit the last message arrived; otherwise messages per
// second until the last one arrived.
func oursOutbox(ctx context.Context, s settings, db *sql.DB, table, queue string, body []byte, perTx int) (outboxRun, error) {
	if err := truncate(ctx, db, table); err != nil {
		return outboxRun{}, err
	}
	transport := rabbitmq.New(rabbitmq.Options.Address(s.url), rabbitmq.Options.MaxOutstandingPublishes(s.window))
	defer transport.Close()
	var counter publishCounter
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Table(table),
		sqlmq.Options.Monitor(&counter),
		sqlmq.Options.ShutdownTimeout(10*time.Second))
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		dispatcher.Listen()
	}()
	defer stopListener(dispatcher, listening, "outbox dispatcher")
	connection, err := outbox.Connect(ctx)
	if err != nil {
		return outboxRun{}, fmt.Errorf("outbox: connect: %w", err)
	}
	defer connection.Close()

	dispatches := make([]messaging.Dispatch, perTx)
	for i := range dispatches {
		dispatches[i] = messaging.Dispatch{RoutingKey: queue, Mandatory: true, ContentType: "application/octet-stream", Payload: body}
	}
	watch := startWatch()
	deadline := watch.start.Add(s.duration)
	commits := 0
	for time.Now().Before(deadline) {
		if err := commitOnce(ctx, connection, dispatches); err != nil {
			return outboxRun{measurement: watch.stop(commits * perTx)}, err
		}
		commits++
	}
	committed := watch.stop(commits)
	lastCommit := time.Now()
	arrived, err := waitDepth(ctx, s.url, queue, commits*perTx, outboxDrainLimit)
	if err != nil {
		return outboxRun{measurement: committed}, fmt.Errorf("outbox: %w", err)
	}
	return shapeOutboxRun(committed, watch.start, lastCommit, arrived, perTx, int(counter.batches.Load())), nil
}

// publishCounter counts the batches the outbox dispatcher hands the transport.
type publishCounter struct {
	sqlmq.NopMonitor
	batches atomic.Int64
}

func (c *publishCounter) MessagePublished(int) { c.batches.Add(1) }

func commitOnce(ctx context.Context, connection messaging.Connection, dispatches []messaging.Dispatch) error {
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		return fmt.Errorf("outbox: begin: %w", err)
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		_ = writer.Rollback()
		return fmt.Errorf("outbox: write: %w", err)
	}
	if err := writer.Commit(); err != nil {
		return fmt.Errorf("outbox: commit: %w", err)
	}
	return nil
}

// stopListener closes a listener and waits, bounded, for its Listen to return.
func stopListener(listener messaging.ListenCloser, listening <-chan struct{}, what string) {
	_ = listener.Close()
	timer := time.NewTimer(15 * time.Second)
	defer timer.Stop()
	select {
	case <-listening:
	case <-timer.C:
		fmt.Printf("# warning: the %s did not stop within 15s of Close\n", what)
	}
}

// waitDepth polls the queue's depth with a passive declare until it holds at
// least want messages, and returns when it saw them.
func waitDepth(ctx context.Context, url, queue string, want int, limit time.Duration) (time.Time, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return time.Time{}, fmt.Errorf("poll the queue depth: cannot reach RabbitMQ: %w", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return time.Time{}, fmt.Errorf("poll the queue depth: channel: %w", err)
	}
	defer ch.Close()
	deadline := time.Now().Add(limit)
	last := 0
	for {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return time.Time{}, fmt.Errorf("poll the depth of queue %s (was it deleted?): %w", queue, err)
		}
		now := time.Now()
		if last = q.Messages; last >= want {
			return now, nil
		}
		if now.After(deadline) {
			return time.Time{}, fmt.Errorf("the broker held %d of %d committed messages %s after the last commit; is the dispatcher publishing (see its WARN lines)?", last, want, limit)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}
