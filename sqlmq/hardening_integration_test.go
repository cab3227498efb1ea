package sqlmq

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
)

// goodRowsBound is how soon 20 good rows behind bad ones must be published.
const goodRowsBound = 5 * time.Second

// The three over-long fields of issue 9: a 300-byte message id that fits the
// varchar(255) column (100 × "€"), a 300-byte header name, a 130 MiB payload.
// Commit refuses each with ErrWireLimit; the same kinds of rows written
// straight into the table (by an older version, or by hand) are retired at
// once by the relay; and 20 good rows behind them publish within seconds.
//
// The 130 MiB payload is refused by Write before anything is stored, from one
// shared allocation freed afterwards. A row that large cannot be inserted on
// the local MariaDB (max_allowed_packet is 16 MiB), so the hand-written
// over-large row uses the same path with a smaller limit: the relay runs with
// MaxPayload(1 MiB) and the row holds 1 MiB + 1 byte.
func TestIntegrationRowsBreakingAWireLimitNeverHoldUpTheRowsBehindThem(t *testing.T) {
	huge := make([]byte, 130<<20)
	t.Cleanup(func() { huge = nil; runtime.GC() })
	for _, b := range backends[:2] { // MariaDB and PostgreSQL
		t.Run(b.name, func(t *testing.T) {
			mq := newBroker(t) // the broker lock before the database's
			db := b.open(t)
			table := outboxTable(t, b, db)
			exchange := mq.exchange("wire")
			received := mq.consume(mq.queue("wire", exchange))
			const limit = 1 << 20
			outbox := newInstance(t, b, db, table, Options.MaxPayload(limit))

			longID := dispatchesTo(exchange, strings.Repeat("€", 100))[0]
			longHeader := dispatchesTo(exchange, "long-header-"+messaging.NewID())[0]
			longHeader.Headers = map[string]any{strings.Repeat("h", 300): "v"}
			tooLarge := dispatchesTo(exchange, "too-large-"+messaging.NewID())[0]
			tooLarge.Payload = huge
			unlimited := newInstance(t, b, db, table) // the default MaxPayload, 128 MiB
			for _, c := range []struct {
				name     string
				outbox   *instance
				dispatch messaging.Dispatch
				field    string
			}{
				{"300-byte message id", outbox, longID, "MessageID"},
				{"300-byte header name", outbox, longHeader, "header name"},
				{"130 MiB payload", unlimited, tooLarge, "Payload"},
			} {
				err := c.outbox.tryCommit(c.dispatch)
				var field *messaging.FieldError
				if !errors.Is(err, messaging.ErrWireLimit) || !errors.As(err, &field) || !strings.HasPrefix(field.Field, c.field) {
					t.Fatalf("%s: Commit returned %v; want ErrWireLimit naming %s", c.name, err, c.field)
				}
			}
			var stored int
			_ = db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&stored)
			if stored != 0 {
				t.Fatalf("%d refused row(s) were stored", stored)
			}

			// The same rows, written straight into the table.
			now := time.Now().UnixMicro()
			for _, row := range []struct {
				id, headers string
				payload     []byte
			}{
				{longID.MessageID, "", []byte("x")},
				{longHeader.MessageID, `{"` + strings.Repeat("h", 300) + `":{"s":"v"}}`, []byte("x")},
				{tooLarge.MessageID, "", make([]byte, limit+1)},
			} {
				var headers any
				if row.headers != "" {
					headers = row.headers
				}
				insert := store{dialect: b.dialect, table: table}
				if _, err := db.Exec(insert.q("INSERT INTO {t} (message_id, topic, routing_key, headers, payload, created_us) VALUES (?, ?, 'test', ?, ?, ?)"),
					row.id, exchange, headers, row.payload, now); err != nil {
					t.Fatalf("insert a hand-written row: %v", err)
				}
			}
			good := messageIDs("good", 20)
			outbox.commit(t, dispatchesTo(exchange, good...)...)
			started := time.Now()
			outbox.listen(t)
			received.awaitWithin(goodRowsBound, good...)
			t.Logf("%s: 20 good rows behind 3 unpublishable ones published in %s", b.name, time.Since(started).Round(time.Millisecond))

			admin := NewAdmin(db, Options.Dialect(b.dialect), Options.Table(table))
			retired, err := admin.Retired(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(retired) != 3 {
				t.Fatalf("%d row(s) retired; want the 3 hand-written ones", len(retired))
			}
			for i, field := range []string{"MessageID is 300 bytes", "header name", "Payload is 1048577 bytes"} {
				if !strings.Contains(retired[i].LastError, field) || retired[i].Attempts != 1 {
					t.Errorf("retired row %d: %d attempt(s), last error %q; want 1 attempt and %q", retired[i].ID, retired[i].Attempts, retired[i].LastError, field)
				}
			}
			_, count := received.snapshot()
			if len(count) != len(good) {
				t.Errorf("%d distinct messages arrived; want only the %d good ones", len(count), len(good))
			}
		})
	}
}

// A row the broker refuses for its size (406 PRECONDITION_FAILED closes the
// channel, and with it every message pipelined after it) is found by
// publishing smaller groups, counted and retired, while 20 good rows behind
// three such rows publish within seconds. The broker's max_message_size is
// lowered to 1 MiB for the test (restored at cleanup), so the rows stay small.
func TestIntegrationRowsTheBrokerRefusesForTheirSizeAreIsolated(t *testing.T) {
	url := testenv.Disrupt(t)
	const brokerMax = 1 << 20
	t.Cleanup(func() { testenv.Rabbitmqctl(t, "eval", "application:set_env(rabbit, max_message_size, 134217728).") })
	testenv.Rabbitmqctl(t, "eval", "application:set_env(rabbit, max_message_size, 1048576).")
	for _, b := range backends[:2] {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			table := outboxTable(t, b, db)
			mq := newBrokerAt(t, url)
			exchange := mq.exchange("size")
			received := mq.consume(mq.queue("size", exchange))
			outbox := newInstance(t, b, db, table, Options.RetryPolicy(retrypolicy.Fixed(2, 50*time.Millisecond)))

			bad := dispatchesTo(exchange, messageIDs("bad", 3)...)
			for i := range bad {
				bad[i].Payload = make([]byte, brokerMax+1024)
			}
			good := messageIDs("good", 20)
			outbox.commit(t, append(bad, dispatchesTo(exchange, good...)...)...)
			started := time.Now()
			outbox.listen(t)
			received.awaitWithin(goodRowsBound, good...)
			t.Logf("%s: 20 good rows behind 3 the broker refuses published in %s", b.name, time.Since(started).Round(time.Millisecond))

			outbox.monitor.Await(t, patience, "the 3 rows retired", func(_, _, _, retired int) bool { return retired == 3 })
			retired, err := NewAdmin(db, Options.Dialect(b.dialect), Options.Table(table)).Retired(context.Background(), 10)
			if err != nil || len(retired) != 3 {
				t.Fatalf("Admin.Retired: %d row(s), %v; want 3", len(retired), err)
			}
			for _, r := range retired {
				if r.Attempts != 2 || !strings.Contains(r.LastError, "PRECONDITION_FAILED") {
					t.Errorf("retired %s: %d attempt(s), last error %q; want 2 and PRECONDITION_FAILED", r.MessageID, r.Attempts, r.LastError)
				}
			}
			_, count := received.snapshot()
			for _, id := range good {
				if count[id] != 1 {
					t.Errorf("good message %s arrived %d times", id, count[id])
				}
			}
		})
	}
}

// brokerStop is how long the broker is stopped while commits go on: 10 s in
// `make test`; WARRENMQ_BROKER_STOP=45s runs the full-size scenario of issue 9.
func brokerStop(t *testing.T) time.Duration {
	if v := os.Getenv("WARRENMQ_BROKER_STOP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("WARRENMQ_BROKER_STOP=%q: %v", v, err)
		}
		return d
	}
	return 10 * time.Second
}

// Commit never waits on the broker: with RabbitMQ stopped, every Commit returns
// within 50 ms (p99; the worst within a second) while far more rows accumulate than the processor's channel
// holds, and every one of them is published once the broker is back.
func TestIntegrationCommitNeverWaitsDuringABrokerStop(t *testing.T) {
	url := testenv.Disrupt(t)
	b := backends[0] // MariaDB
	db := b.open(t)
	table := outboxTable(t, b, db)
	setup := newBrokerAt(t, url)
	exchange := setup.exchange("stop")
	queue := setup.queue("stop", exchange)
	const capacity = 128
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.BrokerTimeout(2*time.Second), rabbitmq.Options.ConnectionName("sqlmq broker stop test"))
	outbox := newInstanceOver(t, transport, b, db, table, Options.ChannelBufferCapacity(capacity))
	outbox.listen(t)

	warm := messageIDs("warm", 1)
	outbox.commit(t, dispatchesTo(exchange, warm...)...)
	newBrokerAt(t, url).consume(queue).await(warm...)

	stop := brokerStop(t)
	t.Cleanup(func() { testenv.Rabbitmqctl(t, "start_app") })
	testenv.Rabbitmqctl(t, "stop_app")
	stopped := time.Now()
	var all []string
	var latencies []time.Duration
	for time.Since(stopped) < stop {
		id := messageIDs("stop", 1)[0]
		started := time.Now()
		if err := outbox.tryCommit(dispatchesTo(exchange, id)...); err != nil {
			t.Fatalf("commit during the broker stop: %v", err)
		}
		latencies = append(latencies, time.Since(started))
		all = append(all, id)
		time.Sleep(5 * time.Millisecond) // real time: a service committing steadily through the real broker's stop

	}
	testenv.Rabbitmqctl(t, "start_app")
	restarted := time.Now()

	slices.Sort(latencies)
	worst, p99 := latencies[len(latencies)-1], latencies[len(latencies)*99/100]
	t.Logf("broker stopped %s: %d commits (channel capacity %d), p99 %s, worst %s", stop, len(all), capacity, p99.Round(10*time.Microsecond), worst.Round(10*time.Microsecond))
	if len(all) <= 2*capacity {
		t.Fatalf("only %d commits during the stop; the test needs more than the channel holds", len(all))
	}
	// What a Commit costs here is MariaDB's commit on a shared two-core
	// machine under -race, so the bound is on the 99th percentile; the worst
	// is held far below the 10 s the outbox used to wait for the broker.
	if p99 > 50*time.Millisecond {
		t.Errorf("Commit p99 was %s during the broker stop; want within 50ms", p99)
	}
	if worst > time.Second {
		t.Errorf("a Commit took %s during the broker stop; nothing should wait on the broker", worst)
	}

	received := newBrokerAt(t, url).consume(queue)
	received.awaitWithin(2*time.Minute, all...)
	_, count := received.snapshot()
	lost, duplicates := 0, 0
	for _, id := range all {
		if count[id] == 0 {
			lost++
		}
		duplicates += max(count[id]-1, 0)
	}
	t.Logf("all %d published %s after the broker returned: lost %d, duplicates %d", len(all), time.Since(restarted).Round(time.Millisecond), lost, duplicates)
	awaitDispatched(t, db, table, len(all)+1, outbox)
}

// tryCommit is commit that returns the error instead of failing the test.
func (o *instance) tryCommit(dispatches ...messaging.Dispatch) error {
	conn, err := o.connector.Connect(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	writer, err := conn.CommitWriter(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = writer.Close() }()
	if _, err := writer.Write(context.Background(), dispatches...); err != nil {
		return err
	}
	return writer.Commit()
}

// awaitWithin is await with a bound of the test's choosing.
func (c *consumer) awaitWithin(within time.Duration, ids ...string) {
	c.t.Helper()
	deadline := time.After(within)
	for {
		c.mu.Lock()
		missing := 0
		for _, id := range ids {
			if c.count[id] == 0 {
				missing++
			}
		}
		changed := c.changed
		c.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			c.t.Fatalf("%d of %d messages did not arrive within %s", missing, len(ids), within)
		}
	}
}

// A memory alarm pauses publishing: the relay keeps its one blocked
// connection and waits (no redial churn on a broker already short of memory),
// counts nothing against the rows, and publishes them all when the alarm
// clears.
func TestIntegrationAMemoryAlarmKeepsTheRelayOnOneConnection(t *testing.T) {
	url := testenv.Disrupt(t)
	b := backends[0]
	db := b.open(t)
	table := outboxTable(t, b, db)
	setup := newBrokerAt(t, url)
	exchange := setup.exchange("alarm")
	queue := setup.queue("alarm", exchange)
	name := "sqlmq alarm test " + messaging.NewID()[:8]
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.ConnectionName(name))
	outbox := newInstanceOver(t, transport, b, db, table)
	outbox.listen(t)
	received := newBrokerAt(t, url).consume(queue)
	warm := messageIDs("warm", 1)
	outbox.commit(t, dispatchesTo(exchange, warm...)...)
	received.await(warm...)

	t.Cleanup(func() { testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4") })
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0")
	all := messageIDs("alarm", 50)
	for _, id := range all {
		outbox.commit(t, dispatchesTo(exchange, id)...)
	}
	connections := map[string]bool{}
	for alarm := time.Now(); time.Since(alarm) < 10*time.Second; {
		for _, line := range strings.Split(testenv.Rabbitmqctl(t, "list_connections", "name", "client_properties", "--no-table-headers", "-q"), "\n") {
			if strings.Contains(line, name) {
				connections[strings.SplitN(line, "\t", 2)[0]] = true
			}
		}
	}
	testenv.Rabbitmqctl(t, "set_vm_memory_high_watermark", "0.4")
	t.Logf("the relay used %d connection(s) during a 10s memory alarm", len(connections))
	if len(connections) > 1 {
		t.Errorf("the relay opened %d connections during the alarm; want it to keep one: %v", len(connections), connections)
	}
	received.awaitWithin(bound, all...)
	var counted int
	_ = db.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE publish_attempts > 0 OR retired_us IS NOT NULL").Scan(&counted)
	if counted != 0 {
		t.Errorf("%d row(s) had attempts counted for the alarm", counted)
	}
}
