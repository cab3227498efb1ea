// Package batch provides a Writer that publishes each call as one committed
// batch: it connects lazily, writes through a CommitWriter, commits, and after
// an error that may have broken its channel or connection closes what it holds
// so the next call redials. An error that leaves the connection healthy (a
// message unroutable, refused by the broker or over a wire limit, or the broker
// blocking the connection during an alarm) keeps it: while blocked, calls fail
// fast with messaging.ErrPublishingPaused and resume on the same connection
// when the alarm clears. Callers get a publish that either landed whole
// (confirmed, and routed when mandatory) or failed with the transport's account
// of what did not.
package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redial"
)

// Writer is a messaging.Writer over a Connector. It is safe for concurrent use;
// calls are serialised on its one connection.
type Writer struct {
	link *redial.Link

	mu     sync.Mutex // serialises calls on the one writer
	closed bool
}

// New returns a Writer that publishes through connector. It does not connect
// until the first Write.
func New(connector messaging.Connector) *Writer {
	return &Writer{link: redial.New(connector, "batch writer")}
}

// Write publishes dispatches as one batch and returns how many landed. An error
// that may have broken the connection (connect, write, a lost confirm, a
// timeout, a closed channel) closes it so that the next call redials; one that
// leaves it healthy (unroutable, refused, over a wire limit, publishing paused
// by a blocked connection) keeps it.
func (w *Writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if len(dispatches) == 0 {
		return 0, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, fmt.Errorf("batch writer: %w", messaging.ErrClosed)
	}
	writer, connection, err := w.link.Writer(ctx)
	if err != nil {
		w.link.Discard(connection)
		return 0, err
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		if !keepsConnection(err) {
			w.link.Discard(connection)
		} else {
			_ = writer.Rollback() // nothing of a failed call may ride on the next one
		}
		return 0, fmt.Errorf("batch writer: write %d message(s): %w", len(dispatches), err)
	}
	if err := writer.Commit(); err != nil {
		switch {
		case !keepsConnection(err):
			w.link.Discard(connection)
		case errors.Is(err, messaging.ErrRefused):
			// A nack: the connection is sound, but the channel may not be
			// (after a quorum queue's leader failed, RabbitMQ nacks every
			// later publish of a channel that published to it, while a new
			// channel is acked), so the next call opens a new one.
			w.link.DropWriter(writer)
		}
		return landed(err), fmt.Errorf("batch writer: commit %d message(s): %w", len(dispatches), err)
	}
	return len(dispatches), nil
}

// landed counts the messages a commit error reports as confirmed and routed.
func landed(err error) int {
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return 0
	}
	return len(publishErr.Results) - len(publishErr.Failed())
}

// keepsConnection reports whether the connection and channel are healthy
// after err, so that redialling would only cost a connection: the broker
// answered some messages with a return or a nack, refused them before sending
// (a wire limit), or has blocked the connection during a memory or disk alarm.
// A blocked connection is kept on purpose: a new one is blocked again after its
// first publish, and dialling one per call during an alarm only adds load to
// a broker already short of memory. Anything else (a lost confirm that is not
// the block's, a timeout, a closed channel) redials.
func keepsConnection(err error) bool {
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return errors.Is(err, messaging.ErrPublishingPaused) || errors.Is(err, messaging.ErrWireLimit)
	}
	for _, failed := range publishErr.Failed() {
		switch {
		case errors.Is(failed.Err, messaging.ErrUnroutable), errors.Is(failed.Err, messaging.ErrRefused):
		case errors.Is(failed.Err, messaging.ErrWireLimit):
		case errors.Is(failed.Err, messaging.ErrPublishingPaused):
			// Including a publish written just before the block and not yet
			// confirmed (also ErrArrivalUnknown): its confirm comes on this
			// connection when the alarm clears.
		default:
			return false
		}
	}
	return true
}

// Close releases the connection, after the call in progress if there is
// one. Later writes fail with messaging.ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.link.Close()
}
