package deadletter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/warrenmq/messaging"
)

type fakeConnector struct {
	mu         sync.Mutex
	connects   int
	declarer   bool
	connectErr error
	writeErr   error
	commitErr  error
	declareErr error
	refuse     int // writes still to refuse with a wire-limit error
	// unroutable, when set, is a routing key every publish to which the
	// broker returns unroutable.
	unroutable  string
	published   []messaging.Dispatch
	contexts    []context.Context
	declared    []string
	connections []*fakeConnection
	// commitStarted, when set, makes Commit signal it and then block until
	// its connection is closed, like a confirm that never comes.
	commitStarted chan struct{}
}

func (c *fakeConnector) Connect(context.Context) (messaging.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connects++
	if c.connectErr != nil {
		return nil, c.connectErr
	}
	connection := &fakeConnection{connector: c, gone: make(chan struct{})}
	c.connections = append(c.connections, connection)
	if c.declarer {
		return &declaringConnection{fakeConnection: connection}, nil
	}
	return connection, nil
}

func (c *fakeConnector) Close() error { return nil }

func (c *fakeConnector) dispatches() []messaging.Dispatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]messaging.Dispatch(nil), c.published...)
}

// targets lists "routing key: error" per published dispatch.
func (c *fakeConnector) targets() []string {
	var out []string
	for _, d := range c.dispatches() {
		out = append(out, fmt.Sprintf("%s %s: %s", d.RoutingKey, d.MessageID, d.Error))
	}
	return out
}

type fakeConnection struct {
	connector *fakeConnector
	closed    bool
	gone      chan struct{} // closed with the connection
}

func (c *fakeConnection) Reader(context.Context) (messaging.Reader, error) {
	return nil, errors.New("not supported")
}
func (c *fakeConnection) Writer(context.Context) (messaging.Writer, error) {
	return &fakeWriter{connector: c.connector, connection: c}, nil
}
func (c *fakeConnection) CommitWriter(context.Context) (messaging.CommitWriter, error) {
	return nil, errors.New("the copies are published through a batch.Writer, on a plain Writer")
}
func (c *fakeConnection) Close() error {
	c.connector.mu.Lock()
	defer c.connector.mu.Unlock()
	if !c.closed {
		close(c.gone)
	}
	c.closed = true
	return nil
}

type declaringConnection struct{ *fakeConnection }

var _ Declarer = (*declaringConnection)(nil)

func (c *declaringConnection) DeclareRetryRung(_ context.Context, queue, rung string, ttl time.Duration) error {
	c.connector.mu.Lock()
	defer c.connector.mu.Unlock()
	if c.connector.declareErr != nil {
		return c.connector.declareErr
	}
	c.connector.declared = append(c.connector.declared, fmt.Sprintf("%s %s %s", queue, rung, ttl))
	return nil
}

// fakeWriter is a transport Writer: Write publishes and waits for the
// confirms (commitErr stands for what they said).
type fakeWriter struct {
	connector  *fakeConnector
	connection *fakeConnection
}

func (w *fakeWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if err := w.send(ctx, dispatches); err != nil {
		return 0, err
	}
	if started := w.connector.commitStarted; started != nil {
		started <- struct{}{}
		select {
		case <-w.connection.gone:
			return 0, fmt.Errorf("the channel closed before the broker confirmed it: %w", messaging.ErrArrivalUnknown)
		case <-ctx.Done():
			return 0, fmt.Errorf("stopped waiting for the broker's confirm (%w): %w", ctx.Err(), messaging.ErrArrivalUnknown)
		}
	}
	w.connector.mu.Lock()
	defer w.connector.mu.Unlock()
	if w.connector.commitErr != nil {
		return 0, w.connector.commitErr
	}
	for _, d := range dispatches {
		if d.RoutingKey == w.connector.unroutable && d.RoutingKey != "" {
			return 0, fmt.Errorf("message %s reached no queue: %w", d.MessageID, messaging.ErrUnroutable)
		}
	}
	w.connector.published = append(w.connector.published, dispatches...)
	return len(dispatches), nil
}

// send is what happens before the confirms are awaited.
func (w *fakeWriter) send(ctx context.Context, dispatches []messaging.Dispatch) error {
	w.connector.mu.Lock()
	defer w.connector.mu.Unlock()
	w.connector.contexts = append(w.connector.contexts, ctx)
	if w.connection.closed {
		return fmt.Errorf("the broker closed the connection: %w", messaging.ErrClosed)
	}
	if w.connector.writeErr != nil {
		return w.connector.writeErr
	}
	if w.connector.refuse > 0 {
		w.connector.refuse--
		return &messaging.FieldError{Field: "the headers and envelope together", Size: 200 << 10, Limit: 96 << 10}
	}
	return ctx.Err()
}

func (w *fakeWriter) Close() error { return nil }

// fakeInner records each call and runs an optional behaviour.
type fakeInner struct {
	mu     sync.Mutex
	calls  [][]any
	action func(ctx context.Context, messages []any)
}

func (h *fakeInner) Handle(ctx context.Context, messages ...any) {
	h.mu.Lock()
	h.calls = append(h.calls, messages)
	h.mu.Unlock()
	if h.action != nil {
		h.action(ctx, messages)
	}
}

type fakeMonitor struct {
	mu     sync.Mutex
	events []string
}

func (m *fakeMonitor) Settled(queue, action, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, queue+" "+action+" "+reason)
}

// bubbleEpoch is when every synctest bubble's clock starts.
var bubbleEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// elapsed runs f in a synctest bubble and returns how much of the bubble's
// synthetic time it took: the waits held in the process, which pass at once
// once every goroutine of the bubble is blocked.
func elapsed(t *testing.T, f func()) (took time.Duration) {
	synctest.Test(t, func(*testing.T) {
		start := time.Now()
		f()
		took = time.Since(start)
	})
	return took
}

func delivery(id string) messaging.Delivery {
	return messaging.Delivery{
		DeliveryID:  uint64(len(id)),
		SourceQueue: "q",
		MessageID:   id,
		MessageType: "order",
		ContentType: "application/json",
		Attempt:     1,
		Headers:     map[string]any{"x-app": "v"},
		Payload:     []byte(`{"id":"` + id + `"}`),
		Message:     id,
	}
}

// recovered runs f and returns what it panicked with.
func recovered(f func()) (value any) {
	defer func() { value = recover() }()
	f()
	return nil
}

// receiveWithin waits at most within for a value from ch, failing the test
// with what it was waiting for instead of hanging.
func receiveWithin[T any](t interface {
	Helper()
	Fatalf(format string, args ...any)
}, ch <-chan T, within time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case value := <-ch:
		return value
	case <-timer.C:
		t.Fatalf("waited %s for %s", within, what)
		var zero T
		return zero
	}
}

// rerun is a stand-in for an inner retry decorator: it runs inner again
// after each panic, at most attempts times, and re-panics the last failure.
func rerun(attempts int, inner messaging.Handler) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		var last any
		for range attempts {
			last = recovered(func() { inner.Handle(ctx, messages...) })
			if last == nil {
				return
			}
		}
		panic(last)
	})
}
