package rabbitmq

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
)

// commitWriter buffers dispatches and publishes them, with confirms, on Commit.
type commitWriter struct {
	writer
	buffer []outgoing
}

// CommitWriter opens a confirm-mode channel whose writes take effect on Commit.
func (c *connection) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	pub, err := newPublisher(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("open a commit writer: %w", err)
	}
	return &commitWriter{writer: writer{pub: pub}}, nil
}

// Write encodes and buffers the dispatches; nothing is sent until Commit. A
// dispatch that cannot travel on AMQP is buffered as refused: Commit publishes
// the others and reports it, alone, in its *messaging.PublishError. On a
// connection that has closed it fails with messaging.ErrClosed at once rather
// than buffer what no Commit can send.
func (w *commitWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("write to a closed commit writer; open a new one: %w", messaging.ErrClosed)
	}
	if err := w.pub.usable(); err != nil {
		return 0, fmt.Errorf("write to a commit writer: %w", err)
	}
	messages := encodeAll(w.pub.config, dispatches)
	w.mu.Lock()
	w.buffer = append(w.buffer, messages...)
	w.mu.Unlock()
	return len(dispatches), nil
}

// Commit publishes the buffer, pipelined, and returns when every message is
// confirmed and routed, or a *messaging.PublishError. It is bounded by the broker
// timeout: past it the connection is severed and the error wraps ErrCommitTimeout.
// The buffer is emptied either way.
func (w *commitWriter) Commit() error {
	w.mu.Lock()
	messages := w.buffer
	w.buffer = nil
	w.mu.Unlock()

	err := w.ready()
	if err == nil && len(messages) > 0 {
		_, err = w.pub.publish(context.Background(), commitOperation, messages)
	}
	w.pub.config.monitor.TransactionCommitted(err)
	return err
}

// Rollback discards the buffer.
func (w *commitWriter) Rollback() error {
	w.mu.Lock()
	w.buffer = nil
	w.mu.Unlock()
	w.pub.config.monitor.TransactionRolledBack(nil)
	return nil
}
