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
	"testing/synctest"
	"time"

	"github.com/smarty/gunit"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
)

// testBound is how long a test waits for an event that must happen, on the
// bubble's clock: waiting costs no real time there, and the longest wait of a
// test (the retry policies of a few attempts) fits well within it.
const testBound = time.Minute

// openSQLite returns a fresh SQLite database with the outbox table.
func openSQLite(t testing.TB) *sql.DB {
	db, _ := openSQLiteDSN(t)
	return db
}

// openSQLiteDSN is openSQLite that also returns the DSN, for a second handle.
func openSQLiteDSN(t testing.TB) (*sql.DB, string) {
	t.Helper()
	dsn := "file:" + filepath.Join(t.TempDir(), "outbox.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	applySchema(t, db, sqldialect.SQLite, DefaultTable)
	return db, dsn
}

func applySchema(t testing.TB, db *sql.DB, d sqldialect.Dialect, table string) {
	t.Helper()
	ddl, err := TableSchema(d, table)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range Statements(ddl) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("apply schema: %v\n%s", err, statement)
		}
	}
}

// inBubble runs test in a synctest bubble on the fixture's test: the
// outbox's timers run on the bubble's clock, which moves only when every
// goroutine of the test waits, so a test sees a retry, a sweep or a linger
// happen exactly when it is due, and at once. Open the databases and the
// harness inside it (with its t).
func inBubble(f interface{ T() gunit.TestingT }, test func(t *testing.T)) {
	synctest.Test(f.T().(*testing.T), test)
}

// elapse lets d pass on the bubble's clock: every timer due meanwhile fires,
// in order, and the caller goes on once the others wait again. Inside a
// bubble it takes no real time.
func elapse(d time.Duration) {
	time.Sleep(d) // the bubble's clock: takes no real time
	synctest.Wait()
}

// fakePublisher records writes; script decides each write's outcome and gate,
// when set, holds every write until the test releases it.
type fakePublisher struct {
	mu      sync.Mutex
	writes  [][]messaging.Dispatch
	script  func(call int, dispatches []messaging.Dispatch) (int, error)
	gate    chan struct{}
	calls   chan []messaging.Dispatch
	closed  bool
	started chan struct{}
}

func newFakePublisher() *fakePublisher {
	return &fakePublisher{calls: make(chan []messaging.Dispatch, 10000)}
}

func (p *fakePublisher) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	p.mu.Lock()
	call := len(p.writes)
	p.writes = append(p.writes, dispatches)
	script, gate := p.script, p.gate
	p.mu.Unlock()
	p.calls <- dispatches
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if script != nil {
		return script(call, dispatches)
	}
	return len(dispatches), nil
}

func (p *fakePublisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	return nil
}

// Next returns the next write, failing the test if none comes.
func (p *fakePublisher) Next(t testing.TB) []messaging.Dispatch {
	t.Helper()
	select {
	case dispatches := <-p.calls:
		return dispatches
	case <-time.After(testBound):
		t.Fatalf("no publish within %s", testBound)
		return nil
	}
}

// Published returns every message id written, in order (retries included).
func (p *fakePublisher) Published() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for _, write := range p.writes {
		for _, d := range write {
			ids = append(ids, d.MessageID)
		}
	}
	return ids
}

// fakeMonitor counts every callback and signals each one.
type fakeMonitor struct {
	mu                                    sync.Mutex
	changed                               chan struct{}
	stored, published, confirmed, retired int
	marks                                 int // MessageConfirmed calls: one per UPDATE
	lags                                  []time.Duration
	inDoubt                               []string // CommitInDoubt calls: "stored err"
}

func (m *fakeMonitor) MessageStored(n int)    { m.count(func() { m.stored += n }) }
func (m *fakeMonitor) MessagePublished(n int) { m.count(func() { m.published += n }) }
func (m *fakeMonitor) MessageConfirmed(n int) { m.count(func() { m.confirmed += n; m.marks++ }) }
func (m *fakeMonitor) MessageRetired(n int)   { m.count(func() { m.retired += n }) }
func (m *fakeMonitor) DispatchLag(d time.Duration) {
	m.count(func() { m.lags = append(m.lags, d) })
}
func (m *fakeMonitor) CommitInDoubt(stored bool, err error) {
	m.count(func() { m.inDoubt = append(m.inDoubt, fmt.Sprint(stored, " ", err)) })
}

func (m *fakeMonitor) count(change func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	change()
	if m.changed != nil {
		close(m.changed)
	}
	m.changed = make(chan struct{})
}

// AwaitConfirmed blocks until n messages were confirmed, for at most testBound.
func (m *fakeMonitor) AwaitConfirmed(t testing.TB, n int) {
	t.Helper()
	m.Await(t, testBound, fmt.Sprintf("%d message(s) confirmed", n), func(_, _, confirmed, _ int) bool { return confirmed >= n })
}

// Await blocks until done holds for the counts, for at most bound, and
// otherwise fails the test saying what it waited for and the counts it saw.
func (m *fakeMonitor) Await(t testing.TB, bound time.Duration, what string, done func(stored, published, confirmed, retired int) bool) {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for {
		m.mu.Lock()
		if m.changed == nil {
			m.changed = make(chan struct{})
		}
		stored, published, confirmed, retired, changed := m.stored, m.published, m.confirmed, m.retired, m.changed
		m.mu.Unlock()
		if done(stored, published, confirmed, retired) {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waited %s for %s: %d stored, %d published, %d confirmed, %d retired", bound, what, stored, published, confirmed, retired)
		}
	}
}

// changes is what fires at the next callback.
func (m *fakeMonitor) changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.changed == nil {
		m.changed = make(chan struct{})
	}
	return m.changed
}

func (m *fakeMonitor) counts() (stored, published, confirmed, retired int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stored, m.published, m.confirmed, m.retired
}

// logRecorder is a slog handler that keeps every record and signals each one.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
	changed chan struct{}
}

func newLogRecorder() *logRecorder { return &logRecorder{changed: make(chan struct{})} }

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	close(l.changed)
	l.changed = make(chan struct{})
	return nil
}

// Lines returns "LEVEL message" for every record.
func (l *logRecorder) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for _, r := range l.records {
		lines = append(lines, fmt.Sprintf("%s %s", r.Level, r.Message))
	}
	return lines
}

// Await blocks until a line containing text is logged and returns it.
func (l *logRecorder) Await(t testing.TB, text string) string {
	t.Helper()
	return l.AwaitN(t, text, 1)
}

// AwaitN blocks until n lines containing text are logged and returns the
// last of them.
func (l *logRecorder) AwaitN(t testing.TB, text string, n int) string {
	t.Helper()
	deadline := time.After(testBound)
	for {
		l.mu.Lock()
		var found []string
		for _, r := range l.records {
			if line := fmt.Sprintf("%s %s", r.Level, r.Message); strings.Contains(line, text) {
				found = append(found, line)
			}
		}
		changed := l.changed
		l.mu.Unlock()
		if len(found) >= n {
			return found[n-1]
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d of %d log lines containing %q within %s; logged: %q", len(found), n, text, testBound, l.Lines())
		}
	}
}

// Times returns when each line containing text was logged, in order: on the
// bubble's clock inside a synctest bubble.
func (l *logRecorder) Times(text string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var times []time.Time
	for _, r := range l.records {
		if strings.Contains(fmt.Sprintf("%s %s", r.Level, r.Message), text) {
			times = append(times, r.Time)
		}
	}
	return times
}

// harness is an outbox over SQLite with every seam replaced.
type harness struct {
	t         testing.TB
	db        *sql.DB
	publisher *fakePublisher
	monitor   *fakeMonitor
	log       *logRecorder
	connector messaging.Connector
	processor messaging.ListenCloser
	listening chan struct{}
}

const (
	testRetry = 5 * time.Second
	testLease = time.Hour
	testSweep = 30 * time.Minute
	testPrune = 2 * time.Hour
)

func newHarness(t testing.TB, db *sql.DB, options ...Option) *harness {
	h := &harness{t: t, db: db, publisher: newFakePublisher(), monitor: &fakeMonitor{}, log: newLogRecorder()}
	base := []Option{
		Options.StorageHandle(db), Options.Dialect(sqldialect.SQLite),
		Options.Logger(slog.New(h.log)), Options.Monitor(h.monitor),
		Options.RetryDelay(testRetry), Options.RetryPolicy(retrypolicy.Fixed(DefaultMaxAttempts, testRetry)),
		Options.LeaseTimeout(testLease), Options.SweepInterval(testSweep), Options.PruneInterval(testPrune),
		func(c *config) { c.newPublisher = func() publisher { return h.publisher } },
	}
	h.connector, h.processor = New(nil, append(base, options...)...)
	t.Cleanup(func() { _ = h.processor.Close() })
	return h
}

// Listen runs the processor on a goroutine the harness waits for at cleanup.
func (h *harness) Listen() {
	h.listening = make(chan struct{})
	go func() {
		defer close(h.listening)
		h.processor.Listen()
	}()
	h.t.Cleanup(func() {
		_ = h.processor.Close()
		h.AwaitStopped()
	})
}

// AwaitStopped fails the test unless Listen has returned.
func (h *harness) AwaitStopped() {
	if h.listening == nil {
		return
	}
	select {
	case <-h.listening:
	case <-time.After(testBound):
		h.t.Fatalf("Listen did not return within %s", testBound)
	}
}

// Commit writes dispatches in one transaction and commits.
func (h *harness) Commit(dispatches ...messaging.Dispatch) error {
	connection, err := h.connector.Connect(context.Background())
	if err != nil {
		return err
	}
	defer func() { _ = connection.Close() }()
	writer, err := connection.CommitWriter(context.Background())
	if err != nil {
		return err
	}
	if _, err := writer.Write(context.Background(), dispatches...); err != nil {
		return err
	}
	return writer.Commit()
}

// CommitAsync commits on another goroutine and returns the result channel.
func (h *harness) CommitAsync(dispatches ...messaging.Dispatch) chan error {
	result := make(chan error, 1)
	go func() { result <- h.Commit(dispatches...) }()
	return result
}

func (h *harness) count(condition string) int {
	h.t.Helper()
	var n int
	if err := h.db.QueryRow("SELECT COUNT(*) FROM Messages WHERE " + condition).Scan(&n); err != nil {
		h.t.Fatalf("count rows: %v", err)
	}
	return n
}

func await(t testing.TB, result chan error) error {
	t.Helper()
	select {
	case err := <-result:
		return err
	case <-time.After(testBound):
		t.Fatalf("no result within %s", testBound)
		return nil
	}
}

func message(id string) messaging.Dispatch {
	return messaging.Dispatch{MessageID: id, Topic: "events", MessageType: "thing-happened", Payload: []byte("payload-" + id)}
}

func messages(ids ...string) []messaging.Dispatch {
	out := make([]messaging.Dispatch, len(ids))
	for i, id := range ids {
		out[i] = message(id)
	}
	return out
}

// tb is the *testing.T behind a gunit fixture.
func tb(f interface{ T() gunit.TestingT }) testing.TB { return f.T().(testing.TB) }

// awaitChannel waits until the processor's channel holds n rows, on the
// bubble's clock.
func (h *harness) awaitChannel(n int) {
	h.t.Helper()
	channel := h.processor.(*processor).outbox.channel
	deadline := time.Now().Add(testBound)
	for synctest.Wait(); len(channel) != n; synctest.Wait() {
		if time.Now().After(deadline) {
			h.t.Fatalf("the processor's channel holds %d rows, not %d, after %s", len(channel), n, testBound)
		}
		elapse(time.Millisecond)
	}
}

// countIn counts the rows of another table in the harness's database.
func (h *harness) countIn(table string) int {
	h.t.Helper()
	var n int
	if err := h.db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&n); err != nil {
		h.t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// awaitCount waits until n rows meet condition.
func (h *harness) awaitCount(condition string, n int) {
	h.t.Helper()
	deadline := time.Now().Add(testBound)
	synctest.Wait()
	for got := h.count(condition); got != n; got = h.count(condition) {
		if time.Now().After(deadline) {
			h.t.Fatalf("%d rows, not %d, meet %q after %s", got, n, condition, testBound)
		}
		elapse(time.Millisecond) // whatever is due runs
		synctest.Wait()
	}
}
