package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	amqp "github.com/rabbitmq/amqp091-go"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqldialect"
)

const bound = 30 * time.Second // the longest an integration test waits for an outcome

// backend is one database the outbox supports.
type backend struct {
	name    string
	dialect sqldialect.Dialect
	open    func(t *testing.T) *sql.DB
}

// backends are the databases the integration tests run against; the first is
// the primary dialect.
var backends = []backend{
	{name: "MariaDB", dialect: sqldialect.MySQL, open: func(t *testing.T) *sql.DB { return testenv.MySQL(t) }},
	{name: "PostgreSQL", dialect: sqldialect.PostgreSQL, open: func(t *testing.T) *sql.DB { return testenv.Postgres(t) }},
	{name: "SQLite", dialect: sqldialect.SQLite, open: openSQLiteFile},
}

func openSQLiteFile(t *testing.T) *sql.DB {
	path := filepath.Join(t.TempDir(), "outbox.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// forEachBackend runs test once per database.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b) })
	}
}

// outboxTable creates a fresh outbox table and drops it when the test ends.
func outboxTable(t *testing.T, b backend, db *sql.DB) string {
	t.Helper()
	table := "outbox_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	ddl, err := TableSchema(b.dialect, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range Statements(ddl) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("create the outbox table on %s: %v\n%s", b.name, err, statement)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	return table
}

// broker is a raw amqp091 client for setting up and observing the broker
// independently of the code under test.
type broker struct {
	t    *testing.T
	url  string
	conn *amqp.Connection
	ch   *amqp.Channel
}

func newBroker(t *testing.T) *broker {
	return newBrokerAt(t, testenv.Broker(t))
}

// newBrokerAt is newBroker for a test that already holds the broker lock.
func newBrokerAt(t *testing.T, url string) *broker {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial RabbitMQ at %s: %v; `make services` starts it", url, err)
	}
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("open a channel: %v", err)
	}
	b := &broker{t: t, url: url, conn: conn, ch: ch}
	t.Cleanup(func() { _ = conn.Close() })
	return b
}

// exchange declares a topic exchange, deleted at the end of the test.
func (b *broker) exchange(prefix string) string {
	b.t.Helper()
	name := testenv.Name(b.t, prefix)
	if err := b.ch.ExchangeDeclare(name, "topic", true, false, false, false, nil); err != nil {
		b.t.Fatalf("declare exchange %s: %v", name, err)
	}
	b.t.Cleanup(func() { b.cleanup(func(ch *amqp.Channel) error { return ch.ExchangeDelete(name, false, false) }) })
	return name
}

// queue declares a queue bound to exchange with "#", deleted at the end of the test.
func (b *broker) queue(prefix, exchange string) string {
	b.t.Helper()
	return b.queueWith(prefix, exchange, nil)
}

// queueWith is queue with the queue's arguments (x-max-length, ...).
func (b *broker) queueWith(prefix, exchange string, arguments amqp.Table) string {
	b.t.Helper()
	name := testenv.Name(b.t, prefix)
	if _, err := b.ch.QueueDeclare(name, true, false, false, false, arguments); err != nil {
		b.t.Fatalf("declare queue %s: %v", name, err)
	}
	if err := b.ch.QueueBind(name, "#", exchange, false, nil); err != nil {
		b.t.Fatalf("bind queue %s: %v", name, err)
	}
	b.t.Cleanup(func() {
		b.cleanup(func(ch *amqp.Channel) error { _, err := ch.QueueDelete(name, false, false, false); return err })
	})
	return name
}

func (b *broker) cleanup(f func(ch *amqp.Channel) error) {
	conn, err := amqp.Dial(b.url)
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	if ch, err := conn.Channel(); err == nil {
		_ = f(ch)
	}
}

// consumer reads a queue and counts deliveries by message id.
type consumer struct {
	t          *testing.T
	mu         sync.Mutex
	order      []string
	count      map[string]int
	deliveries map[string]amqp.Delivery
	changed    chan struct{}
}

func (b *broker) consume(queue string) *consumer {
	b.t.Helper()
	ch, err := b.conn.Channel()
	if err != nil {
		b.t.Fatalf("open a consumer channel: %v", err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		b.t.Fatalf("consume %s: %v", queue, err)
	}
	c := &consumer{t: b.t, count: map[string]int{}, deliveries: map[string]amqp.Delivery{}, changed: make(chan struct{})}
	go func() {
		for d := range deliveries {
			c.mu.Lock()
			c.order = append(c.order, d.MessageId)
			c.count[d.MessageId]++
			c.deliveries[d.MessageId] = d
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
		}
	}()
	return c
}

// await waits until every id has arrived at least once.
func (c *consumer) await(ids ...string) {
	c.t.Helper()
	deadline := time.After(bound)
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
			c.t.Fatalf("%d of %d messages did not arrive within %s", missing, len(ids), bound)
		}
	}
}

func (c *consumer) snapshot() (order []string, count map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	count = map[string]int{}
	for id, n := range c.count {
		count[id] = n
	}
	return append([]string(nil), c.order...), count
}

func (c *consumer) delivery(id string) amqp.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deliveries[id]
}

// instance is one service instance: an outbox over the table and its processor.
type instance struct {
	connector messaging.Connector
	processor messaging.ListenCloser
	stopped   chan struct{}
}

func newInstance(t *testing.T, b backend, db *sql.DB, table string, options ...Option) *instance {
	t.Helper()
	transport := rabbitmq.New(rabbitmq.Options.Address(testenv.AMQPURL), rabbitmq.Options.Origin("sqlmq-test@host"))
	return newInstanceOver(t, transport, b, db, table, options...)
}

// newInstanceOver is newInstance over a transport of the test's making.
func newInstanceOver(t *testing.T, transport messaging.Connector, b backend, db *sql.DB, table string, options ...Option) *instance {
	t.Helper()
	t.Cleanup(func() { _ = transport.Close() })
	base := []Option{
		Options.StorageHandle(db), Options.Dialect(b.dialect), Options.Table(table), Options.Logger(testLogger(t)),
		Options.RetryDelay(50 * time.Millisecond),
	}
	connector, processor := New(transport, append(base, options...)...)
	return &instance{connector: connector, processor: processor}
}

// listen starts the processor; it is closed (and awaited) at the end of the test.
func (o *instance) listen(t *testing.T) {
	o.stopped = make(chan struct{})
	go func() {
		defer close(o.stopped)
		o.processor.Listen()
	}()
	t.Cleanup(func() { o.stop(t) })
}

func (o *instance) stop(t *testing.T) {
	if err := o.processor.Close(); err != nil {
		t.Errorf("close the processor: %v", err)
	}
	if o.stopped == nil {
		return
	}
	select {
	case <-o.stopped:
	case <-time.After(bound):
		t.Errorf("Listen did not return within %s of Close", bound)
	}
}

// commit writes dispatches in one transaction and commits it.
func (o *instance) commit(t *testing.T, dispatches ...messaging.Dispatch) {
	t.Helper()
	conn, err := o.connector.Connect(context.Background())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close() }()
	writer, err := conn.CommitWriter(context.Background())
	if err != nil {
		t.Fatalf("open commit writer: %v", err)
	}
	if _, err := writer.Write(context.Background(), dispatches...); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := writer.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func messageIDs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d-%s", prefix, i, messaging.NewID()[:8])
	}
	return out
}

func dispatchesTo(exchange string, ids ...string) []messaging.Dispatch {
	out := make([]messaging.Dispatch, len(ids))
	for i, id := range ids {
		out[i] = messaging.Dispatch{MessageID: id, Topic: exchange, RoutingKey: "test", MessageType: "test-message", Payload: []byte(id)}
	}
	return out
}
