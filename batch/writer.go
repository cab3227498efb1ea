// Package batch provides the one publisher of this module that keeps a
// connection and redials: a Writer that publishes each call as one confirmed
// batch. It connects lazily, publishes through one transport Writer shared by
// concurrent callers (their confirms pipelined on one channel), and decides
// after each failure, by one rule, what it keeps:
//
//   - a connection that closed or was severed under the call
//     (messaging.IsConnectionLost) is closed, so the next call dials again;
//   - a verdict on a message (unroutable, over a wire limit) or a connection
//     the broker blocked during an alarm (messaging.ErrPublishingPaused) keeps
//     the connection and its channel: while blocked, calls fail fast and
//     resume on the same connection when the alarm clears;
//   - a nack (messaging.ErrRefused) keeps the connection and opens a new
//     channel for the next call;
//   - a caller that stopped waiting (its context ended) says nothing about
//     the connection, which other callers share: it is kept.
//
// A call that finds the kept connection closed before anything of it was
// sent is made once more on a new connection, so a connection lost while the
// writer was idle does not fail the next publish; a call whose messages may
// have reached the broker (messaging.ErrArrivalUnknown) is never sent again
// here. Callers get a publish that either landed whole (confirmed, and routed
// when mandatory) or failed with the transport's account of what did not.
//
// Declare runs a declaration on the connection the publishes use, once per
// connection, so that what a publish needs (a retry rung, a queue) exists on
// the node it is published to.
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

	// calls is held shared by every Write and Declare and exclusively by
	// Close, so Close waits for the calls in flight (each bounded by the
	// transport).
	calls  sync.RWMutex
	closed atomic.Bool

	// declared are the keys Declare ran on declaredOn, the kept connection.
	mu         sync.Mutex
	declaredOn messaging.Connection
	declared   map[string]bool
}

// New returns a Writer that publishes through connector. It does not connect
// until the first Write or Declare. Close it to release the connection; the
// connector stays its owner's.
func New(connector messaging.Connector) *Writer {
	return &Writer{link: redial.New(connector, "batch writer")}
}

// Write publishes dispatches and returns how many landed (confirmed, and
// routed when mandatory), with the transport's error when not all did. What
// the writer keeps after a failure is the package's rule: a lost connection
// is dialled again on the next call, a verdict on a message or a blocked
// connection keeps it, a nack opens a new channel.
func (w *Writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if len(dispatches) == 0 {
		return 0, nil
	}
	w.calls.RLock()
	defer w.calls.RUnlock()
	if w.closed.Load() {
		return 0, fmt.Errorf("batch writer: %w", messaging.ErrClosed)
	}
	n, err := w.write(ctx, dispatches)
	if err != nil && n == 0 && messaging.IsNotSent(err) && ctx.Err() == nil {
		// The kept connection had closed (while idle, say) before anything
		// was sent: the same call on a new one cannot duplicate a message.
		n, err = w.write(ctx, dispatches)
	}
	if err != nil {
		return n, fmt.Errorf("batch writer: publish %d message(s): %w", len(dispatches), err)
	}
	return n, nil
}

// write makes one attempt on the kept writer and applies the rule to its
// failure.
func (w *Writer) write(ctx context.Context, dispatches []messaging.Dispatch) (int, error) {
	writer, connection, err := w.link.Shared(ctx)
	if err != nil {
		w.link.Discard(connection)
		return 0, err
	}
	n, err := writer.Write(ctx, dispatches...)
	if err == nil {
		return n, nil
	}
	switch after(ctx, err) {
	case dialAgain:
		w.link.Discard(connection)
	case newChannel:
		// After a quorum queue's leader failed, RabbitMQ nacks every later
		// publish of a channel that published to it, while a new channel
		// on the same connection is acked.
		w.link.DropShared(writer)
	}
	return max(n, landed(err)), err
}

// keep is what a failed write leaves of the kept connection.
type keep int

const (
	keepAll    keep = iota // the connection and its channel are sound
	newChannel             // the connection is sound; the channel is not trusted
	dialAgain              // the connection is lost or cannot be trusted
)

// after applies the package's rule to a failed write's error.
func after(ctx context.Context, err error) keep {
	switch {
	case ctx.Err() != nil && !errors.Is(err, messaging.ErrClosed):
		// The caller stopped waiting: its confirms are unknown, but the
		// connection, shared with other callers, is not known to be lost
		// (closing it would fail their publishes in flight). If it was, the
		// next call finds it closed and dials again.
		return keepAll
	case messaging.IsConnectionLost(err):
		return dialAgain
	case keepsConnection(err):
		if errors.Is(err, messaging.ErrRefused) {
			return newChannel
		}
		return keepAll
	default:
		return dialAgain // an error this rule does not know: do not trust the connection
	}
}

// keepsConnection reports whether every message err accounts for failed in
// a way that leaves the connection sound: a verdict on the message itself
// (unroutable, nacked, over a wire limit), the broker blocking the connection
// during an alarm (a new connection would be blocked again after its first
// publish, and dialling one per call only adds load to a broker short of
// memory), or the window of unconfirmed publishes staying full while the
// broker still confirms.
func keepsConnection(err error) bool {
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return sound(err)
	}
	for _, failed := range publishErr.Failed() {
		if !sound(failed.Err) {
			return false
		}
	}
	return true
}

func sound(err error) bool {
	for _, kept := range []error{messaging.ErrUnroutable, messaging.ErrRefused, messaging.ErrWireLimit,
		messaging.ErrPublishingPaused, messaging.ErrTooManyOutstanding} {
		if errors.Is(err, kept) {
			return true
		}
	}
	return false
}

// landed counts the messages a commit error reports as confirmed and routed.
func landed(err error) int {
	var publishErr *messaging.PublishError
	if !errors.As(err, &publishErr) {
		return 0
	}
	return len(publishErr.Results) - len(publishErr.Failed())
}

// Declare runs declare on the connection this writer publishes on, dialling
// one when there is none, so that what the next publishes need exists on the
// broker node they reach. It runs once per connection for each key: a later
// call with the same key returns nil without running it, until the writer
// dials a new connection (which may be another node's); then the next call
// runs it again. A declaration that fails is not remembered and its error is
// returned, wrapped; one whose connection was lost under it
// (messaging.IsConnectionLost) also makes the next call dial again.
// Concurrent first calls with one key may each run declare, so it must be
// idempotent, as AMQP declarations are.
func (w *Writer) Declare(ctx context.Context, key string, declare func(ctx context.Context, connection messaging.Connection) error) error {
	w.calls.RLock()
	defer w.calls.RUnlock()
	if w.closed.Load() {
		return fmt.Errorf("batch writer: %w", messaging.ErrClosed)
	}
	connection, err := w.link.Connection(ctx)
	if err != nil {
		return err
	}
	if w.isDeclared(connection, key) {
		return nil
	}
	if err := declare(ctx, connection); err != nil {
		if messaging.IsConnectionLost(err) {
			w.link.Discard(connection)
		}
		return fmt.Errorf("batch writer: declare %s: %w", key, err)
	}
	w.mu.Lock()
	if w.declaredOn == connection {
		w.declared[key] = true
	}
	w.mu.Unlock()
	return nil
}

// isDeclared reports whether key was declared on connection, forgetting
// what was declared on a connection that has been replaced.
func (w *Writer) isDeclared(connection messaging.Connection, key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.declaredOn != connection {
		w.declaredOn, w.declared = connection, map[string]bool{}
	}
	return w.declared[key]
}

// Close releases the connection once the calls in flight have returned.
// Later calls fail with messaging.ErrClosed.
func (w *Writer) Close() error {
	w.closed.Store(true)
	w.calls.Lock()
	defer w.calls.Unlock()
	return w.link.Close()
}
