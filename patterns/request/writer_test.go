package request

import (
	"context"
	"errors"
	"testing"

	"github.com/warrenmq/messaging"
)

// fakeConnector hands out connections whose writers are fakeWriters failing
// with the next error of errs; it counts connections opened and closed.
type fakeConnector struct {
	errs   []error
	opened int
	closed int
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	c.opened++
	var err error
	if len(c.errs) > 0 {
		err, c.errs = c.errs[0], c.errs[1:]
	}
	return &fakeConnection{connector: c, err: err}, nil
}

func (c *fakeConnector) Close() error { return nil }

type fakeConnection struct {
	connector *fakeConnector
	err       error
}

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) {
	return nil, errors.New("no")
}
func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) {
	return &fakeWriter{err: c.err}, nil
}
func (c *fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return nil, errors.New("no")
}
func (c *fakeConnection) Close() error { c.connector.closed++; return nil }

// TestSharedWriterDropsOnlyABrokenWriter: an unroutable message keeps the
// connection; a closed channel drops it, and the next call dials again.
func TestSharedWriterDropsOnlyABrokenWriter(t *testing.T) {
	unroutable := &messaging.PublishError{Results: []messaging.PublishResult{{Err: messaging.ErrUnroutable}}}
	connector := &fakeConnector{errs: []error{unroutable}}
	w := newSharedWriter(connector, "test")
	ctx := context.Background()
	if _, err := w.Write(ctx, messaging.Dispatch{}); !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("got %v; want ErrUnroutable", err)
	}
	if _, err := w.Write(ctx, messaging.Dispatch{}); !errors.Is(err, messaging.ErrUnroutable) {
		t.Fatalf("got %v; want the same writer's ErrUnroutable again", err)
	}
	if connector.opened != 1 || connector.closed != 0 {
		t.Fatalf("after unroutable: %d opened, %d closed; want 1, 0", connector.opened, connector.closed)
	}

	connector = &fakeConnector{errs: []error{messaging.ErrClosed, nil}}
	w = newSharedWriter(connector, "test")
	if _, err := w.Write(ctx, messaging.Dispatch{}); !errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("got %v; want ErrClosed", err)
	}
	if _, err := w.Write(ctx, messaging.Dispatch{}); err != nil {
		t.Fatalf("the call after a broken writer: %v; want a new connection", err)
	}
	if connector.opened != 2 || connector.closed != 1 {
		t.Fatalf("after a broken writer: %d opened, %d closed; want 2, 1", connector.opened, connector.closed)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(ctx, messaging.Dispatch{}); !errors.Is(err, messaging.ErrClosed) {
		t.Fatalf("a write after Close: %v; want ErrClosed", err)
	}
	if connector.closed != 2 {
		t.Fatalf("Close left the connection open")
	}
}

// TestSharedWriterKeepsTheWriterWhenACallerGivesUp: a caller whose context
// ended stopped waiting for its confirm; the channel is fine, and the other
// callers' publishes on it go on.
func TestSharedWriterKeepsTheWriterWhenACallerGivesUp(t *testing.T) {
	connector := &fakeConnector{errs: []error{messaging.ErrArrivalUnknown}}
	w := newSharedWriter(connector, "test")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Write(ctx, messaging.Dispatch{}); err == nil {
		t.Fatal("want the fake's error")
	}
	if connector.closed != 0 {
		t.Fatal("a caller giving up closed the shared connection")
	}
}
