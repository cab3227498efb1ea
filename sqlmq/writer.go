package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// commitWriter buffers dispatches and stores them in its SQL transaction on
// Commit.
type commitWriter struct {
	outbox     *outbox
	connection *connection
	ctx        context.Context
	tx         *sql.Tx

	mu      sync.Mutex
	pending []messaging.Dispatch
	done    bool
}

// Write validates and buffers dispatches; nothing reaches the database until
// Commit. A dispatch that cannot travel on AMQP (a short string over 255
// bytes, a header the wire cannot carry, a payload over MaxPayload) is refused
// with a *messaging.FieldError (errors.Is messaging.ErrWireLimit), and none of
// the call's dispatches is buffered. It fills MessageID, FirstSeen and
// Timestamp now, so the message published later is the one described here.
func (w *commitWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	normalized, err := w.outbox.accept(w.done, dispatches)
	if err != nil {
		return 0, err
	}
	w.pending = append(w.pending, normalized...)
	return len(dispatches), nil
}

// accept checks and normalizes the dispatches of one Write: all of them, or
// none with the error of the first that cannot be stored, or none when the
// writer is done.
func (o *outbox) accept(done bool, dispatches []messaging.Dispatch) ([]messaging.Dispatch, error) {
	if done {
		return nil, fmt.Errorf("sqlmq: write after commit or rollback: %w", messaging.ErrClosed)
	}
	now := time.Now()
	normalized := make([]messaging.Dispatch, 0, len(dispatches))
	for i, d := range dispatches {
		checked := d
		checked.Verbatim = false // a row cannot store it; see normalize
		if err := wire.Check(checked, o.config.maxPayload); err != nil {
			return nil, fmt.Errorf("sqlmq: dispatch %d of %d refused, so none of them was written: %w", i+1, len(dispatches), err)
		}
		n, err := normalize(d, now)
		if err != nil {
			return nil, err
		}
		normalized = append(normalized, n)
	}
	return normalized, nil
}

// Commit inserts the buffered dispatches in the transaction, commits it, and
// hands the messages to the dispatch processor. An error means the transaction
// did not commit. Once SQL has committed, Commit returns nil at once: the rows
// are durable and will be published. It never waits for the processor or the
// broker; rows the processor's channel has no room for stay in the table, and
// the processor publishes them from there.
func (w *commitWriter) Commit() error {
	rows, err := w.commit()
	if err != nil || len(rows) == 0 {
		return err
	}
	w.outbox.handoff(rows)
	return nil
}

// commit stores the buffered dispatches and commits SQL; it returns the rows to
// hand to the processor.
func (w *commitWriter) commit() ([]row, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil, fmt.Errorf("sqlmq: commit after commit or rollback: %w", messaging.ErrClosed)
	}
	w.done = true
	defer w.connection.release(w)
	config := w.outbox.config
	created := time.Now()
	leaseUntil := created.Add(config.lease)
	var ids []int64
	var unprepared []int
	if len(w.pending) > 0 {
		var err error
		ids, unprepared, err = w.outbox.store.insert(w.ctx, w.tx, true, w.pending, created, config.owner, leaseUntil)
		if err != nil {
			_ = w.tx.Rollback()
			return nil, err
		}
		w.outbox.committing(ids) // until Commit hands them off
	}
	if err := w.tx.Commit(); err != nil {
		if len(ids) == 0 || !inDoubt(err) {
			w.outbox.settled(ids)
			return nil, fmt.Errorf("sqlmq: commit the outbox transaction: %w; none of its %d message(s) was stored", err, len(w.pending))
		}
		if err := w.resolve(ids[0], w.pending[0].MessageID, len(ids), err); err != nil {
			w.outbox.settled(ids) // not stored, or unknown: if stored, the table publishes them
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	// The transaction has given its connection back: prepare on the handle
	// the sizes this commit prepared in its transaction, for the next ones.
	w.outbox.store.learn(w.ctx, unprepared)
	config.monitor.MessageStored(len(ids))
	rows := make([]row, len(ids))
	for i, id := range ids {
		rows[i] = row{id: id, dispatch: clone(w.pending[i]), created: created, leaseUntil: leaseUntil}
	}
	w.pending = nil
	return rows, nil
}

// Rollback rolls the transaction back and forgets the buffered dispatches. It
// does nothing after Commit or Rollback.
func (w *commitWriter) Rollback() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return nil
	}
	w.done = true
	w.pending = nil
	defer w.connection.release(w)
	if err := w.tx.Rollback(); err != nil && err != sql.ErrTxDone {
		return fmt.Errorf("sqlmq: roll back the outbox transaction: %w", err)
	}
	return nil
}

// Close rolls back what was not committed.
func (w *commitWriter) Close() error { return w.Rollback() }

// autoCommitWriter commits each Write in a transaction of its own.
type autoCommitWriter struct {
	connection *connection
}

// Write stores dispatches in a transaction of their own, commits, and hands
// them to the processor. It returns len(dispatches) once they are durable.
func (w *autoCommitWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	if len(dispatches) == 0 {
		return 0, nil
	}
	writer, err := w.connection.begin(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		_ = writer.Rollback()
		return 0, err
	}
	if err := writer.Commit(); err != nil {
		return 0, err
	}
	return len(dispatches), nil
}

// Close does nothing; each Write has already finished its transaction.
func (w *autoCommitWriter) Close() error { return nil }
