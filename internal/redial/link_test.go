package redial

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/warrenmq/messaging"
)

type fakeConnector struct {
	mu          sync.Mutex
	dials       int
	dialErr     error
	writerErr   error
	connections []*fakeConnection
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials++
	if c.dialErr != nil {
		return nil, c.dialErr
	}
	connection := &fakeConnection{connector: c, closed: make(chan struct{})}
	c.connections = append(c.connections, connection)
	return connection, nil
}

func (c *fakeConnector) Close() error { return nil }

type fakeConnection struct {
	messaging.Connection // only what the link calls is implemented
	connector            *fakeConnector
	writers              []*fakeWriter
	closeOnce            sync.Once
	closed               chan struct{}
}

func (c *fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	if err := c.connector.writerErr; err != nil {
		return nil, err
	}
	writer := &fakeWriter{}
	c.writers = append(c.writers, writer)
	return writer, nil
}

func (c *fakeConnection) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

func (c *fakeConnection) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

type fakeWriter struct {
	messaging.CommitWriter
	closed bool
}

func (w *fakeWriter) Close() error { w.closed = true; return nil }

func TestTheLinkDialsOnceAndOnlyWhenUsed(t *testing.T) {
	connector := &fakeConnector{}
	link := New(connector, "test")
	if connector.dials != 0 {
		t.Fatal("New must not dial")
	}
	first, _, err := link.Writer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	second, _, _ := link.Writer(context.Background())
	connection, _ := link.Connection(context.Background())
	if first != second || connector.dials != 1 || connection != connector.connections[0] {
		t.Fatalf("dials %d, same writer %v: the kept connection and writer must be reused", connector.dials, first == second)
	}
}

func TestDiscardClosesOnlyTheKeptConnection(t *testing.T) {
	connector := &fakeConnector{}
	link := New(connector, "test")
	_, old, _ := link.Writer(context.Background())
	link.Discard(old)
	if !old.(*fakeConnection).isClosed() || !old.(*fakeConnection).writers[0].closed {
		t.Fatal("the discarded connection and its writer must be closed")
	}
	_, current, _ := link.Writer(context.Background())
	if connector.dials != 2 {
		t.Fatalf("dials %d: the next call must dial again", connector.dials)
	}
	link.Discard(old) // a late caller's stale report
	if current.(*fakeConnection).isClosed() {
		t.Fatal("a stale discard must not close the connection that replaced it")
	}
	link.Discard(nil)
}

func TestAWriterThatCannotOpenLeavesTheConnectionToTheCaller(t *testing.T) {
	refused := errors.New("channel refused")
	connector := &fakeConnector{writerErr: refused}
	link := New(connector, "status")
	_, connection, err := link.Writer(context.Background())
	if !errors.Is(err, refused) || err.Error() != "status: open a commit writer: channel refused" {
		t.Fatalf("error %v", err)
	}
	if connection == nil || connection.(*fakeConnection).isClosed() {
		t.Fatal("the connection must be returned, still open, for the caller to judge")
	}
}

func TestADialErrorIsWrappedWithTheName(t *testing.T) {
	refused := errors.New("connection refused")
	link := New(&fakeConnector{dialErr: refused}, "batch writer")
	_, _, err := link.Writer(context.Background())
	if !errors.Is(err, refused) || err.Error() != "batch writer: connect: connection refused" {
		t.Fatalf("error %v", err)
	}
}

func TestCloseClosesWhatIsKeptAndRefusesLaterCalls(t *testing.T) {
	connector := &fakeConnector{}
	link := New(connector, "deadletter")
	_, connection, _ := link.Writer(context.Background())
	if err := link.Close(); err != nil {
		t.Fatal(err)
	}
	if !connection.(*fakeConnection).isClosed() || !connection.(*fakeConnection).writers[0].closed {
		t.Fatal("Close must close the writer and the connection")
	}
	if _, err := link.Connection(context.Background()); !errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
	if connector.dials != 1 {
		t.Fatalf("dials %d: nothing may dial after Close", connector.dials)
	}
}

func TestSeverClosesInTheBackgroundAndTheNextCallDials(t *testing.T) {
	connector := &fakeConnector{}
	link := New(connector, "status")
	connection, _ := link.Connection(context.Background())
	link.Sever()
	<-connection.(*fakeConnection).closed
	if _, err := link.Connection(context.Background()); err != nil || connector.dials != 2 {
		t.Fatalf("dials %d, err %v", connector.dials, err)
	}
	link.Reset()
	if !connector.connections[1].isClosed() {
		t.Fatal("Reset must close the kept connection")
	}
}

func TestDropWriterKeepsTheConnection(t *testing.T) {
	connector := &fakeConnector{}
	link := New(connector, "batch writer")
	old, connection, _ := link.Writer(context.Background())
	link.DropWriter(old)
	current, again, _ := link.Writer(context.Background())
	if current == old || again != connection || connector.dials != 1 || connection.(*fakeConnection).isClosed() {
		t.Fatalf("want a new writer on the same, open connection (dials %d)", connector.dials)
	}
	if !old.(*fakeWriter).closed {
		t.Fatal("the dropped writer must be closed")
	}
	link.DropWriter(old) // stale: the current writer stays
	if w, _, _ := link.Writer(context.Background()); w != current {
		t.Fatal("a stale DropWriter must not drop the current writer")
	}
}
