// Package batch provides a Writer that publishes each call as one confirmed
// batch: it connects lazily, publishes through one transport Writer shared by
// concurrent callers (their confirms pipelined on one channel), and after an
// error that may have broken its channel or connection closes what it holds
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
	"sync/atomic"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redial"
)

// Writer is a messaging.Writer over a Connector. It is safe for concurrent
// use, and concurrent calls do not wait for each other: they share one
// transport Writer, whose publishes and confirms are pipelined on one channel,
// so many goroutines publishing a message each cost one channel, not one
// round trip each in turn.
type Writer struct {
	link *redial.Link

	// calls is held shared by every Write and exclusively by Close, so Close
	// waits for the calls in flight (each bounded by the transport).
	calls  sync.RWMutex
	closed atomic.Bool
}

// New returns a Writer that publishes through connector. It does not connect
// until the first Write.
func New(connector messaging.Connector) *Writer {
	return &Writer{link: redial.New(connector, "batch writer")}
}

// Write publishes dispatches and returns how many landed (confirmed, and
// routed when mandatory). An error that may have broken the connection
// (connect, a lost confirm, a timeout, a closed channel) closes it so that the
// next call redials; one that leaves it healthy (unroutable, over a wire
// limit, publishing paused by a blocked connection) keeps it; a nack keeps the
// connection but opens a new channel for the next call.
func (w *Writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if len(dispatches) == 0 {
		return 0, nil
	}
	w.calls.RLock()
	defer w.calls.RUnlock()
	if w.closed.Load() {
		return 0, fmt.Errorf("batch writer: %w", messaging.ErrClosed)
	}
	writer, connection, err := w.link.Shared(ctx)
	if err != nil {
		w.link.Discard(connection)
		return 0, err
	}
	n, err := writer.Write(ctx, dispatches...)
	if err != nil {
		switch {
		case !keepsConnection(err):
			w.link.Discard(connection)
		case errors.Is(err, messaging.ErrRefused):
			// A nack: the connection is sound, but the channel may not be
			// (after a quorum queue's leader failed, RabbitMQ nacks every
			// later publish of a channel that published to it, while a new
			// channel is acked), so the next call opens a new one.
			w.link.DropShared(writer)
		}
		return max(n, landed(err)), fmt.Errorf("batch writer: publish %d message(s): %w", len(dispatches), err)
	}
	return n, nil
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

// Close releases the connection once the calls in flight have returned.
// Later writes fail with messaging.ErrClosed.
func (w *Writer) Close() error {
	w.closed.Store(true)
	w.calls.Lock()
	defer w.calls.Unlock()
	return w.link.Close()
}
