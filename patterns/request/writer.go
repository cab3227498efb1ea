package request

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redial"
)

// sharedWriter publishes requests (or replies) for many goroutines at once on
// one connection and one confirm-mode writer, which pipelines them: a caller
// waits for its own confirm, not behind every other caller's as it would on a
// batch.Writer, which serialises whole calls. The connection is kept by a
// redial.Link; after an error that may have broken the channel or connection
// both are dropped, and the next call dials again; an error that leaves them
// healthy keeps them.
type sharedWriter struct {
	link *redial.Link
	name string

	mu         sync.Mutex
	connection messaging.Connection
	writer     messaging.Writer
}

func newSharedWriter(connector messaging.Connector, name string) *sharedWriter {
	return &sharedWriter{link: redial.New(connector, name), name: name}
}

// Write publishes dispatches on the kept writer, dialling one first when
// there is none.
func (w *sharedWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	connection, writer, err := w.acquire(ctx)
	if err != nil {
		return 0, err
	}
	n, err := writer.Write(ctx, dispatches...)
	// A caller that stopped waiting (its context ended) says nothing about the
	// channel: closing it would fail every other caller's publish in flight.
	if err != nil && ctx.Err() == nil && !keepsWriter(err) {
		w.discard(connection, writer)
	}
	return n, err
}

func (w *sharedWriter) acquire(ctx context.Context) (messaging.Connection, messaging.Writer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	connection, err := w.link.Connection(ctx)
	if err != nil {
		return nil, nil, err
	}
	if w.writer != nil && w.connection == connection {
		return connection, w.writer, nil
	}
	writer, err := connection.Writer(ctx)
	if err != nil {
		w.link.Discard(connection)
		return nil, nil, fmt.Errorf("%s: open a writer: %w", w.name, err)
	}
	w.connection, w.writer = connection, writer
	return connection, writer, nil
}

// discard closes writer and its connection if they are still the kept ones:
// a caller that failed late cannot cut the ones the next caller opened.
func (w *sharedWriter) discard(connection messaging.Connection, writer messaging.Writer) {
	w.mu.Lock()
	if w.writer != writer {
		w.mu.Unlock()
		return
	}
	w.connection, w.writer = nil, nil
	w.mu.Unlock()
	_ = writer.Close()
	w.link.Discard(connection)
}

// Close closes what is kept and refuses later calls with messaging.ErrClosed.
// Closing the connection under calls in flight makes them return.
func (w *sharedWriter) Close() error {
	w.mu.Lock()
	writer := w.writer
	w.connection, w.writer = nil, nil
	w.mu.Unlock()
	var errs []error
	if writer != nil {
		if err := writer.Close(); err != nil && !errors.Is(err, messaging.ErrClosed) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, w.link.Close())
	return errors.Join(errs...)
}

// keepsWriter reports whether the channel and connection are healthy after
// err: the broker answered each failed message with a return or a nack, the
// message was refused before it was sent (a wire limit), or the connection
// is blocked by an alarm (a new one would be blocked too). Anything else
// (a lost confirm, a timeout, a closed channel or connection) drops them.
func keepsWriter(err error) bool {
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return errors.Is(err, messaging.ErrPublishingPaused) || errors.Is(err, messaging.ErrWireLimit)
	}
	for _, failed := range publishErr.Failed() {
		switch {
		case errors.Is(failed.Err, messaging.ErrUnroutable), errors.Is(failed.Err, messaging.ErrRefused),
			errors.Is(failed.Err, messaging.ErrWireLimit), errors.Is(failed.Err, messaging.ErrPublishingPaused):
		default:
			return false
		}
	}
	return true
}
