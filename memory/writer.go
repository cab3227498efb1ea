package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
)

// writer publishes each Write at once, as a confirm-mode channel does. Its
// state is guarded by the broker's lock.
type writer struct {
	conn   *connection
	closed bool
	// broken is the channel error (an undeclared exchange) after which, as on
	// RabbitMQ, the channel accepts nothing more.
	broken error
}

func (w *writer) usableLocked() error {
	if w.closed {
		return closedError("writer")
	}
	if err := w.conn.usableLocked(); err != nil {
		return err
	}
	return w.broken
}

// Write publishes every dispatch and returns how many landed. When any did
// not, it returns a *messaging.PublishError with a result per dispatch. A
// dispatch that cannot travel on AMQP (a field over its wire limit, a header
// value a table cannot carry, a payload over Options.MaxMessageSize, a
// reserved x-acemq- header) is refused alone, as on RabbitMQ: its result
// wraps messaging.ErrWireLimit or the reserved-header error, and the others
// are published.
func (w *writer) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	return w.accept(ctx, dispatches, func(messages []*message, mandatory []bool) (int, error) {
		w.conn.broker.sweepLocked()
		return w.publishLocked(messages, mandatory)
	})
}

// accept checks, under the broker's lock, that a write may proceed, turns its
// dispatches into messages (envelope defaults filled, headers checked) and
// hands them to take, still under the lock; both writers start here.
func (w *writer) accept(ctx context.Context, dispatches []messaging.Dispatch, take func([]*message, []bool) (int, error)) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b := w.conn.broker
	b.mu.Lock()
	defer b.unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	return take(b.messagesOf(dispatches))
}

func (w *writer) publishLocked(messages []*message, mandatory []bool) (int, error) {
	b := w.conn.broker
	results := make([]messaging.PublishResult, len(messages))
	landed := 0
	for i, m := range messages {
		results[i].MessageID = m.envelope.MessageID
		if m.refused != nil { // refused alone before anything was sent
			results[i].Err = m.refused
			continue
		}
		if w.broken != nil {
			results[i].Err = w.broken
			continue
		}
		queues, err := b.publishLocked(m, mandatory[i])
		var refused *messaging.BrokerError
		if errors.As(err, &refused) {
			w.broken = fmt.Errorf("memory: the writer's channel was closed by an earlier error (%w); open a new writer: %w", err, messaging.ErrClosed)
		}
		results[i].Confirmed = refused == nil
		results[i].Routed = err == nil && queues > 0
		results[i].Err = err
		if err == nil {
			landed++
		}
	}
	if landed < len(messages) {
		return landed, &messaging.PublishError{Results: results}
	}
	return landed, nil
}

// Close closes the writer; writing afterwards fails with messaging.ErrClosed.
func (w *writer) Close() error {
	b := w.conn.broker
	b.mu.Lock()
	defer b.unlock()
	w.closeLocked()
	delete(w.conn.writers, w)
	return nil
}

func (w *writer) closeLocked() {
	w.closed = true
}

// commitWriter holds writes until Commit, as a transactional channel does.
type commitWriter struct {
	*writer
	pending   []*message
	mandatory []bool
}

// Write holds the dispatches (copied, with their envelope defaults filled) for
// the next Commit and reports them all accepted; a dispatch that cannot travel
// on AMQP is held as refused, and Commit reports it alone in its
// *messaging.PublishError while publishing the others.
func (w *commitWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	return w.accept(ctx, dispatches, func(messages []*message, mandatory []bool) (int, error) {
		w.pending = append(w.pending, messages...)
		w.mandatory = append(w.mandatory, mandatory...)
		return len(dispatches), nil
	})
}

// Commit publishes everything written since the last Commit or Rollback, in
// order, as the RabbitMQ transport does (confirmed publishes, not an AMQP
// transaction): it returns a *messaging.PublishError when any did not land.
// An undeclared exchange closes the writer's channel, so what follows it in
// the batch fails too. The buffer is emptied either way.
func (w *commitWriter) Commit() error {
	b := w.conn.broker
	b.mu.Lock()
	defer b.unlock()
	pending, mandatory := w.pending, w.mandatory
	w.pending, w.mandatory = nil, nil
	if err := w.usableLocked(); err != nil {
		return err
	}
	if len(pending) == 0 {
		return nil
	}
	b.sweepLocked()
	_, err := w.publishLocked(pending, mandatory)
	return err
}

// Rollback forgets everything written since the last Commit or Rollback.
func (w *commitWriter) Rollback() error {
	b := w.conn.broker
	b.mu.Lock()
	defer b.unlock()
	w.pending, w.mandatory = nil, nil
	return nil
}

// Close forgets uncommitted writes and closes the writer.
func (w *commitWriter) Close() error {
	_ = w.Rollback() // never fails
	return w.writer.Close()
}
