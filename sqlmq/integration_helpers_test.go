package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
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

// bound is how long an integration test waits with nothing moving: no new
// message arrived, no row confirmed. A machine busy with other programs slows
// a test down; it does not stop it, so a wait that sees progress goes on,
// up to patience in all.
const bound = 30 * time.Second

// patience is the longest an integration test waits for an outcome while it
// is making progress.
const patience = 10 * time.Minute

// awaitProgress waits until status reports done, looking again whenever one
// of the channels changes returns fires. It gives up when what status saw
// stayed the same for bound, or after patience in all, failing the test with
// what it waited for, what it saw last, and what the explanations (asked
// then) say.
func awaitProgress(t *testing.T, what string, status func() (done bool, seen string), changes func() []<-chan struct{}, explanations ...func() string) {
	t.Helper()
	started := time.Now()
	stall := time.NewTimer(bound)
	defer stall.Stop()
	giveUp := time.NewTimer(patience)
	defer giveUp.Stop()
	last := ""
	for {
		// The channels first: a change after them closes one, so none is
		// missed between looking and waiting.
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stall.C)}, {Dir: reflect.SelectRecv, Chan: reflect.ValueOf(giveUp.C)}}
		for _, c := range changes() {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
		}
		done, seen := status()
		if done {
			return
		}
		if seen != last {
			last = seen
			stall.Reset(bound)
		}
		chosen, _, _ := reflect.Select(cases)
		if chosen > 1 {
			continue
		}
		for _, explain := range explanations {
			seen += "; " + explain()
		}
		if chosen == 0 {
			t.Fatalf("waited for %s: nothing moved for %s (after %s): %s", what, bound, time.Since(started).Round(time.Millisecond), seen)
		}
		t.Fatalf("waited %s for %s, still moving: %s", patience, what, seen)
	}
}

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
	url        string
	queue      string
	closed     chan *amqp.Error // the consumer's connection ended
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
	c := &consumer{t: b.t, url: b.url, queue: queue, closed: b.conn.NotifyClose(make(chan *amqp.Error, 1)),
		count: map[string]int{}, deliveries: map[string]amqp.Delivery{}, changed: make(chan struct{})}
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

// await waits until every id has arrived at least once, for as long as
// messages keep arriving (see awaitProgress).
func (c *consumer) await(ids ...string) {
	c.t.Helper()
	awaitProgress(c.t, fmt.Sprintf("%d message(s) to arrive", len(ids)), c.arrived(ids), c.changes, c.queueState)
}

// arrived is the status of a wait for ids: done when each arrived, and how
// many did.
func (c *consumer) arrived(ids []string) func() (bool, string) {
	return func() (bool, string) {
		missing := c.missing(ids)
		if len(missing) == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("%d of %d arrived, %d delivery(ies) in all; the first missing: %s",
			len(ids)-len(missing), len(ids), c.deliveryCount(), strings.Join(missing[:min(3, len(missing))], ", "))
	}
}

// missing returns the ids that have not arrived.
func (c *consumer) missing(ids []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, id := range ids {
		if c.count[id] == 0 {
			missing = append(missing, id)
		}
	}
	return missing
}

func (c *consumer) deliveryCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}

// changes is what fires when the next delivery arrives.
func (c *consumer) changes() []<-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []<-chan struct{}{c.changed}
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

// instance is one service instance: an outbox over the table and its
// processor, and what its monitor heard.
type instance struct {
	connector messaging.Connector
	processor messaging.ListenCloser
	monitor   *fakeMonitor
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
	monitor := &fakeMonitor{}
	base := []Option{
		Options.StorageHandle(db), Options.Dialect(b.dialect), Options.Table(table), Options.Logger(testLogger(t)),
		Options.RetryDelay(50 * time.Millisecond), Options.Monitor(monitor),
	}
	connector, processor := New(transport, append(base, options...)...)
	return &instance{connector: connector, processor: processor, monitor: monitor}
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

// awaitDispatched waits until the instances' processors have marked want rows
// dispatched, for as long as rows keep being confirmed (see awaitProgress),
// and checks that the table says so too.
func awaitDispatched(t *testing.T, db *sql.DB, table string, want int, instances ...*instance) {
	t.Helper()
	confirmed := func() int {
		total := 0
		for _, o := range instances {
			_, _, n, _ := o.monitor.counts()
			total += n
		}
		return total
	}
	awaitProgress(t, fmt.Sprintf("%d row(s) marked dispatched", want), func() (bool, string) {
		n := confirmed()
		return n >= want, fmt.Sprintf("%d of %d confirmed and marked", n, want)
	}, func() []<-chan struct{} {
		var changes []<-chan struct{}
		for _, o := range instances {
			changes = append(changes, o.monitor.changes())
		}
		return changes
	})
	var dispatched int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + table + " WHERE dispatched_us IS NOT NULL").Scan(&dispatched); err != nil {
		t.Fatal(err)
	}
	if dispatched != want {
		t.Fatalf("the processors confirmed %d row(s); the table has %d dispatched, want %d", confirmed(), dispatched, want)
	}
}

// tableState says, for a test that gives up, where an outbox table's rows are:
// how many are dispatched, retired, waiting (and, of those, leased and set
// aside), and the lowest waiting id.
func tableState(db *sql.DB, table string) string {
	var dispatched, retired, waiting, leased, setAside int
	var lowest sql.NullInt64
	err := db.QueryRow("SELECT "+
		"COALESCE(SUM(CASE WHEN dispatched_us IS NOT NULL THEN 1 ELSE 0 END), 0), "+
		"COALESCE(SUM(CASE WHEN retired_us IS NOT NULL AND dispatched_us IS NULL THEN 1 ELSE 0 END), 0), "+
		"COALESCE(SUM(CASE WHEN "+pendingCondition+" THEN 1 ELSE 0 END), 0), "+
		"COALESCE(SUM(CASE WHEN "+pendingCondition+" AND lease_owner IS NOT NULL THEN 1 ELSE 0 END), 0), "+
		"COALESCE(SUM(CASE WHEN "+pendingCondition+" AND lease_owner IS NULL AND lease_until_us IS NOT NULL THEN 1 ELSE 0 END), 0), "+
		"MIN(CASE WHEN "+pendingCondition+" THEN id END) FROM "+table).Scan(&dispatched, &retired, &waiting, &leased, &setAside, &lowest)
	if err != nil {
		return fmt.Sprintf("the table %s could not be read: %v", table, err)
	}
	return fmt.Sprintf("the table %s holds %d dispatched, %d retired, %d waiting (%d leased, %d set aside; the lowest waiting id %d)",
		table, dispatched, retired, waiting, leased, setAside, lowest.Int64)
}

// awaitArrival is consumer.await that also says, when it gives up, where the
// outbox table's rows are and what the queue holds.
func (c *consumer) awaitArrival(db *sql.DB, table string, ids ...string) {
	c.t.Helper()
	awaitProgress(c.t, fmt.Sprintf("%d message(s) to arrive", len(ids)), c.arrived(ids), c.changes,
		func() string { return tableState(db, table) }, c.queueState)
}

// queueState says what the broker holds in the consumer's queue, and whether
// the consumer's connection ended, for a test that gives up.
func (c *consumer) queueState() string {
	ended := "open"
	select {
	case err := <-c.closed:
		ended = fmt.Sprintf("closed (%v)", err)
	default:
	}
	conn, err := amqp.Dial(c.url)
	if err != nil {
		return fmt.Sprintf("the consumer's connection is %s; the queue cannot be inspected: %v", ended, err)
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		return fmt.Sprintf("the consumer's connection is %s; the queue cannot be inspected: %v", ended, err)
	}
	q, err := ch.QueueDeclarePassive(c.queue, true, false, false, false, nil)
	if err != nil {
		return fmt.Sprintf("the consumer's connection is %s; the queue cannot be inspected: %v", ended, err)
	}
	return fmt.Sprintf("the consumer's connection is %s; the queue holds %d message(s) ready, with %d consumer(s)", ended, q.Messages, q.Consumers)
}
