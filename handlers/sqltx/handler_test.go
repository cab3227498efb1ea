package sqltx

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
)

func TestSQLiteFixture(t *testing.T) {
	gunit.Run(new(SQLiteFixture), t)
}

// SQLiteFixture runs the handler against a real SQLite database in a temp file.
type SQLiteFixture struct {
	*gunit.Fixture

	db      *sql.DB
	monitor *fakeMonitor
	failure any
	ctx     context.Context
	cancel  context.CancelFunc
}

func (f *SQLiteFixture) Setup() {
	db, err := sql.Open("sqlite", filepath.Join(f.T().(*testing.T).TempDir(), "sqltx.db"))
	if err != nil {
		f.T().(*testing.T).Fatalf("open sqlite: %v", err)
	}
	f.db = db
	_, err = db.Exec("CREATE TABLE handled (message TEXT NOT NULL)")
	f.So(err, should.BeNil)
	f.monitor = &fakeMonitor{}
	f.ctx, f.cancel = context.WithCancel(context.Background())
}

func (f *SQLiteFixture) Teardown() {
	f.cancel()
	_ = f.db.Close()
}

func (f *SQLiteFixture) factory(tx *sql.Tx) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		for _, message := range messages {
			if _, err := tx.ExecContext(ctx, "INSERT INTO handled (message) VALUES (?)", message); err != nil {
				panic(err)
			}
		}
		if f.failure != nil {
			panic(f.failure)
		}
	})
}

func (f *SQLiteFixture) handle(options ...Option) (recovered any) {
	defer func() { recovered = recover() }()
	New(f.db, f.factory, append(options, Options.Monitor(f.monitor))...).Handle(f.ctx, "a", "b")
	return nil
}

func (f *SQLiteFixture) rows() int {
	var count int
	f.So(f.db.QueryRow("SELECT COUNT(*) FROM handled").Scan(&count), should.BeNil)
	return count
}

func (f *SQLiteFixture) TestSuccessCommits() {
	f.So(f.handle(), should.BeNil)

	f.So(f.rows(), should.Equal, 2)
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "committed:<nil>"})
}

func (f *SQLiteFixture) TestHandlerPanicRollsBackAndRepanicsTheSameValue() {
	f.failure = "handler broke"

	f.So(f.handle(), should.Equal, "handler broke")

	f.So(f.rows(), should.Equal, 0)
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "rolledback:<nil>"})
}

func (f *SQLiteFixture) TestCommitFailurePanicsWithTheCause() {
	f.failure = nil
	handler := New(f.db, func(tx *sql.Tx) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			_, _ = tx.ExecContext(ctx, "INSERT INTO handled (message) VALUES ('x')")
			f.cancel() // database/sql rolls back; Commit then fails
		})
	}, Options.Monitor(f.monitor))

	var recovered any
	func() {
		defer func() { recovered = recover() }()
		handler.Handle(f.ctx, 1)
	}()

	err, _ := recovered.(error)
	f.So(errors.Is(err, context.Canceled), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "commit")
	f.So(f.rows(), should.Equal, 0)
	f.So(f.monitor.events[1], should.StartWith, "committed:context canceled")
}

func (f *SQLiteFixture) TestBeginFailurePanicsWithTheCause() {
	_ = f.db.Close()

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.StartWith, "sqltx: begin the batch's transaction: ")
	f.So(f.monitor.events, should.HaveLength, 1)
}

func (f *SQLiteFixture) TestNilHandlerRollsBack() {
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		New(f.db, func(*sql.Tx) messaging.Handler { return nil }, Options.Monitor(f.monitor)).Handle(f.ctx, 1)
	}()

	err, _ := recovered.(error)
	f.So(err.Error(), should.ContainSubstring, "nil handler")
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "rolledback:<nil>"})
}

//////////////////////////////////////////////////////////////////////////////

func TestIsolationFixture(t *testing.T) {
	gunit.Run(new(IsolationFixture), t)
}

// IsolationFixture uses a recording driver to see the options BeginTx receives.
type IsolationFixture struct {
	*gunit.Fixture
}

func (f *IsolationFixture) TestIsolationLevelReachesTheDriver() {
	conn := &recordingConn{}
	db := sql.OpenDB(recordingConnector{conn: conn})
	defer func() { _ = db.Close() }()

	New(db, func(*sql.Tx) messaging.Handler { return messaging.HandlerFunc(func(context.Context, ...any) {}) },
		Options.IsolationLevel(sql.LevelSerializable)).Handle(context.Background(), 1)
	New(db, func(*sql.Tx) messaging.Handler { return messaging.HandlerFunc(func(context.Context, ...any) {}) }).
		Handle(context.Background(), 1)

	f.So(conn.levels(), should.Equal, []driver.IsolationLevel{
		driver.IsolationLevel(sql.LevelSerializable), driver.IsolationLevel(sql.LevelDefault),
	})
}

type recordingConnector struct{ conn *recordingConn }

func (c recordingConnector) Connect(context.Context) (driver.Conn, error) { return c.conn, nil }
func (c recordingConnector) Driver() driver.Driver                        { return nil }

type recordingConn struct {
	mu   sync.Mutex
	seen []driver.IsolationLevel
}

func (c *recordingConn) levels() []driver.IsolationLevel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

func (c *recordingConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("not supported") }
func (c *recordingConn) Close() error                        { return nil }
func (c *recordingConn) Begin() (driver.Tx, error)           { return recordingTx{}, nil }
func (c *recordingConn) BeginTx(_ context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, opts.Isolation)
	return recordingTx{}, nil
}

type recordingTx struct{}

func (recordingTx) Commit() error   { return nil }
func (recordingTx) Rollback() error { return nil }

type fakeMonitor struct{ events []string }

func (m *fakeMonitor) TransactionStarted(err error)    { m.record("started", err) }
func (m *fakeMonitor) TransactionCommitted(err error)  { m.record("committed", err) }
func (m *fakeMonitor) TransactionRolledBack(err error) { m.record("rolledback", err) }
func (m *fakeMonitor) record(name string, err error) {
	text := "<nil>"
	if err != nil {
		text = err.Error()
	}
	m.events = append(m.events, name+":"+text)
}

func (f *SQLiteFixture) TestTheMiddlewareFormPutsTheTransactionInTheContext() {
	handler := messaging.Chain(Middleware(f.db))(messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		slot := messaging.TransactionSlotFrom(ctx)
		if slot == nil || slot.Tx == nil {
			panic("no transaction in the context")
		}
		for _, message := range messages {
			if _, err := slot.Tx.ExecContext(ctx, "INSERT INTO handled (message) VALUES (?)", message); err != nil {
				panic(err)
			}
		}
		if f.failure != nil {
			panic(f.failure)
		}
	}))
	handler.Handle(f.ctx, "a", "b")
	f.failure = "boom"
	f.So(func() { handler.Handle(f.ctx, "c") }, should.Panic)
	var count int
	f.So(f.db.QueryRow("SELECT COUNT(*) FROM handled").Scan(&count), should.BeNil)
	f.So(count, should.Equal, 2) // the failed batch's row was rolled back
}
