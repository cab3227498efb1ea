package transactional

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestHandlerFixture(t *testing.T) {
	gunit.Run(new(HandlerFixture), t)
}

type HandlerFixture struct {
	*gunit.Fixture

	connector *fakeConnector
	monitor   *fakeMonitor
	states    []State
	handled   [][]any
	failure   any
	handler   messaging.Handler
	write     bool
}

func (f *HandlerFixture) Setup() {
	f.connector = &fakeConnector{tx: &sql.Tx{}}
	f.monitor = &fakeMonitor{}
	f.handler = New(f.connector, f.factory, Options.Monitor(f.monitor))
}

func (f *HandlerFixture) factory(state State) messaging.Handler {
	f.states = append(f.states, state)
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		f.handled = append(f.handled, messages)
		if f.write {
			_, _ = state.Writer.Write(ctx, messaging.Dispatch{Topic: "out"})
			_ = state.Writer.Close()
		}
		if f.failure != nil {
			panic(f.failure)
		}
	})
}

func (f *HandlerFixture) handle() (recovered any) {
	defer func() { recovered = recover() }()
	f.handler.Handle(context.Background(), "a", "b")
	return nil
}

func (f *HandlerFixture) TestSuccessCommitsOnce() {
	f.write = true

	recovered := f.handle()

	f.So(recovered, should.BeNil)
	f.So(f.handled, should.Equal, [][]any{{"a", "b"}})
	f.So(f.connector.connects, should.Equal, 1)
	writer := f.connector.connection.writers[0]
	f.So(writer.written, should.HaveLength, 1)
	f.So(writer.commits, should.Equal, 1)
	f.So(writer.rollbacks, should.Equal, 0)
	f.So(writer.closes, should.Equal, 1)
	f.So(f.connector.connection.closes, should.Equal, 0)
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "committed:<nil>"})
}

func (f *HandlerFixture) TestTheSlotsTransactionReachesTheFactory() {
	f.handle()

	f.So(f.states, should.HaveLength, 1)
	f.So(f.states[0].Tx, should.Equal, f.connector.tx)
	f.So(f.states[0].Writer, should.NotBeNil)
}

func (f *HandlerFixture) TestWithoutAnOutboxTxIsNil() {
	f.connector.tx = nil

	f.handle()

	f.So(f.states[0].Tx, should.BeNil)
}

func (f *HandlerFixture) TestTheConnectionIsKeptAcrossBatches() {
	f.handle()
	f.handle()

	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.connection.writers, should.HaveLength, 2)
}

func (f *HandlerFixture) TestConnectFailurePanicsWithTheCauseAndRedials() {
	f.connector.connectErr = errors.New("dial refused")

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(errors.Is(err, f.connector.connectErr), should.BeTrue)
	f.So(f.handled, should.BeEmpty)
	f.So(f.monitor.events, should.Equal, []string{"started:" + err.Error()})

	f.connector.connectErr = nil
	f.So(f.handle(), should.BeNil)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *HandlerFixture) TestWriterFailurePanicsClosesTheConnectionAndRedials() {
	f.handle()
	first := f.connector.connection
	first.writerErr = errors.New("channel refused")

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(errors.Is(err, first.writerErr), should.BeTrue)
	f.So(first.closes, should.Equal, 1)
	f.So(f.handled, should.HaveLength, 1)

	f.So(f.handle(), should.BeNil)
	f.So(f.connector.connects, should.Equal, 2)
}

func (f *HandlerFixture) TestHandlerPanicRollsBackAndRepanicsTheOriginalValue() {
	f.failure = "handler broke"

	recovered := f.handle()

	f.So(recovered, should.Equal, "handler broke")
	writer := f.connector.connection.writers[0]
	f.So(writer.commits, should.Equal, 0)
	f.So(writer.rollbacks, should.Equal, 1)
	f.So(writer.closes, should.Equal, 1)
	f.So(f.connector.connection.closes, should.Equal, 0) // shared by every worker: kept
	f.So(writer.lateClose, should.BeFalse)
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "rolledback:<nil>"})

	f.failure = nil
	f.So(f.handle(), should.BeNil)
	f.So(f.connector.connects, should.Equal, 1)
}

func (f *HandlerFixture) TestAHandlerPanicLeavesAnotherWorkersOpenBatchToCommit() {
	entered := make(chan struct{})
	release := make(chan struct{})
	handler := New(f.connector, func(State) messaging.Handler {
		return messaging.HandlerFunc(func(_ context.Context, messages ...any) {
			switch messages[0] {
			case "slow":
				close(entered)
				<-release // bounded: the test closes release below
			case "broken":
				panic("handler broke")
			}
		})
	})
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		handler.Handle(context.Background(), "slow")
	}()
	receive(f.T(), entered, "the slow worker's handler to start")

	recovered := func() (value any) {
		defer func() { value = recover() }()
		handler.Handle(context.Background(), "broken")
		return nil
	}()
	close(release)

	f.So(recovered, should.Equal, "handler broke")
	f.So(receive(f.T(), done, "the slow worker's batch to finish"), should.BeNil)
	f.So(f.connector.connection.closes, should.Equal, 0)
	f.So(f.connector.connection.commitCount(), should.Equal, 1)
	f.So(f.connector.connects, should.Equal, 1)
}

// receive waits at most 5 s for a value from ch, failing the test with what
// it was waiting for.
func receive[T any](t interface {
	Helper()
	Fatalf(format string, args ...any)
}, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case value := <-ch:
		return value
	case <-timer.C:
		t.Fatalf("waited 5 s for %s", what)
		var zero T
		return zero
	}
}

func (f *HandlerFixture) TestFatalPanicValueSurvivesUnchanged() {
	fatal := messaging.Fatal(errors.New("bad input"))
	f.failure = fatal

	recovered := f.handle()

	f.So(recovered, should.Equal, fatal)
}

func (f *HandlerFixture) TestCommitFailureRollsBackAndPanicsWithTheCause() {
	f.connector.commitErr = errors.New("commit timeout")

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(errors.Is(err, f.connector.commitErr), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "commit 2 message(s)")
	writer := f.connector.connection.writers[0]
	f.So(writer.rollbacks, should.Equal, 1)
	f.So(writer.closes, should.Equal, 1)
	f.So(f.connector.connection.closes, should.Equal, 1)
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "committed:commit timeout", "rolledback:<nil>"})
}

func (f *HandlerFixture) TestRollbackFailureIsReportedAndTheOriginalPanicKept() {
	f.failure = "handler broke"
	f.connector.rollbackErr = errors.New("rollback failed")

	recovered := f.handle()

	f.So(recovered, should.Equal, "handler broke")
	f.So(f.monitor.events, should.Equal, []string{"started:<nil>", "rolledback:rollback failed"})
}

func (f *HandlerFixture) TestNilHandlerFromTheFactoryRollsBack() {
	f.handler = New(f.connector, func(State) messaging.Handler { return nil })

	recovered := f.handle()

	err, _ := recovered.(error)
	f.So(err, should.NotBeNil)
	f.So(err.Error(), should.ContainSubstring, "nil handler")
	f.So(f.connector.connection.writers[0].rollbacks, should.Equal, 1)
}

func (f *HandlerFixture) TestCloseClosesTheKeptConnection() {
	f.handle()

	err := f.handler.(io.Closer).Close()

	f.So(err, should.BeNil)
	f.So(f.connector.connection.closes, should.Equal, 1)
	f.So(f.handler.(io.Closer).Close(), should.BeNil)
}

func (f *HandlerFixture) TestConcurrentWorkersShareOneConnection() {
	handler := New(f.connector, func(State) messaging.Handler {
		return messaging.HandlerFunc(func(context.Context, ...any) {})
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				handler.Handle(context.Background(), 1)
			}
		}()
	}
	wg.Wait()

	f.So(f.connector.connects, should.Equal, 1)
	f.So(f.connector.connection.commitCount(), should.Equal, 160)
}

//////////////////////////////////////////////////////////////////////////////

type fakeConnector struct {
	mu          sync.Mutex
	tx          *sql.Tx
	connects    int
	connectErr  error
	commitErr   error
	rollbackErr error
	connection  *fakeConnection
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connects++
	if c.connectErr != nil {
		return nil, c.connectErr
	}
	c.connection = &fakeConnection{connector: c}
	return c.connection, nil
}

func (c *fakeConnector) Close() error { return nil }

type fakeConnection struct {
	connector *fakeConnector
	mu        sync.Mutex
	writers   []*fakeCommitWriter
	writerErr error
	closes    int
}

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) { return nil, nil }
func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) { return nil, nil }

// CommitWriter fills the transaction slot the way an outbox does.
func (c *fakeConnection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writerErr != nil {
		return nil, c.writerErr
	}
	if slot := messaging.TransactionSlotFrom(ctx); slot != nil {
		slot.Tx = c.connector.tx
	}
	writer := &fakeCommitWriter{connection: c, commitErr: c.connector.commitErr, rollbackErr: c.connector.rollbackErr}
	c.writers = append(c.writers, writer)
	return writer, nil
}

func (c *fakeConnection) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes++
	return nil
}

func (c *fakeConnection) commitCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, w := range c.writers {
		total += w.commits
	}
	return total
}

type fakeCommitWriter struct {
	connection  *fakeConnection
	lateClose   bool // closed after its connection
	written     []messaging.Dispatch
	commits     int
	rollbacks   int
	closes      int
	commitErr   error
	rollbackErr error
}

func (w *fakeCommitWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.written = append(w.written, dispatches...)
	return len(dispatches), nil
}

func (w *fakeCommitWriter) Commit() error {
	w.commits++
	return w.commitErr
}

func (w *fakeCommitWriter) Rollback() error {
	w.rollbacks++
	return w.rollbackErr
}

func (w *fakeCommitWriter) Close() error {
	w.closes++
	w.connection.mu.Lock()
	w.lateClose = w.connection.closes > 0
	w.connection.mu.Unlock()
	return nil
}

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

func (f *HandlerFixture) TestTheMiddlewareFormHandsTheStateThroughTheContext() {
	var seen []State
	inner := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		state, ok := StateFrom(ctx)
		if !ok {
			panic("no state in the context")
		}
		seen = append(seen, state)
		_, _ = state.Writer.Write(ctx, messaging.Dispatch{Topic: "out"})
	})
	handler := messaging.Chain(Middleware(f.connector))(inner)
	handler.Handle(context.Background(), "a")
	handler.Handle(context.Background(), "b")
	f.So(seen, should.HaveLength, 2)
	f.So(seen[0].Tx, should.Equal, f.connector.tx)
	writers := f.connector.connection.writers
	f.So(writers, should.HaveLength, 2)
	f.So(writers[0].written, should.HaveLength, 1)
	f.So(writers[1].commits, should.Equal, 1)
	_, ok := StateFrom(context.Background())
	f.So(ok, should.BeFalse)
}

func (f *HandlerFixture) TestRunCommitsWhatItsFunctionWroteInItsTransaction() {
	err := Run(context.Background(), f.connector, func(ctx context.Context, state State) error {
		f.So(state.Tx, should.Equal, f.connector.tx)
		_, err := state.Writer.Write(ctx, messaging.Dispatch{MessageID: "placed"})
		return err
	})
	f.So(err, should.BeNil)
	writer := f.connector.connection.writers[0]
	f.So(writer.written, should.HaveLength, 1)
	f.So(writer.commits, should.Equal, 1)
	f.So(writer.rollbacks, should.Equal, 0)
	f.So(writer.closes, should.Equal, 1)
	f.So(f.connector.connection.closes, should.Equal, 1)
}

func (f *HandlerFixture) TestRunRollsBackWhenItsFunctionFails() {
	refused := errors.New("out of stock")
	err := Run(context.Background(), f.connector, func(ctx context.Context, state State) error {
		_, _ = state.Writer.Write(ctx, messaging.Dispatch{MessageID: "placed"})
		return refused
	})
	f.So(err, should.Equal, refused)
	writer := f.connector.connection.writers[0]
	f.So(writer.commits, should.Equal, 0)
	f.So(writer.rollbacks, should.Equal, 1)
	f.So(writer.closes, should.Equal, 1)
}

func (f *HandlerFixture) TestRunRollsBackAndRepanicsWhenItsFunctionPanics() {
	value := recoveredValue(func() {
		_ = Run(context.Background(), f.connector, func(context.Context, State) error { panic("boom") })
	})
	f.So(value, should.Equal, "boom")
	writer := f.connector.connection.writers[0]
	f.So(writer.rollbacks, should.Equal, 1)
	f.So(writer.closes, should.Equal, 1)
	f.So(f.connector.connection.closes, should.Equal, 1)
}

func (f *HandlerFixture) TestRunReturnsAFailedCommit() {
	f.connector.commitErr = errors.New("the database went away")
	err := Run(context.Background(), f.connector, func(context.Context, State) error { return nil })
	f.So(err, should.Wrap, f.connector.commitErr)
	f.So(err.Error(), should.StartWith, "transactional: commit: ")
	f.So(f.connector.connection.writers[0].rollbacks, should.Equal, 1) // as New does after a failed commit
}

func recoveredValue(run func()) (value any) {
	defer func() { value = recover() }()
	run()
	return nil
}
