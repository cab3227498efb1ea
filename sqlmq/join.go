package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// A service that manages its own transactions (sqlc, a repository layer) can
// write its messages into them: the outbox joins the caller's transaction
// instead of beginning one, and its Commit and Rollback stay the caller's.

type joinKey struct{}

// WithTransaction returns a context that carries tx, a transaction of the
// caller's on the outbox's database, for the outbox to join. A CommitWriter
// opened on an outbox connection with this context (through any decorator in
// between, such as serialization) writes its rows into tx, and never commits
// or rolls it back:
//
//	tx, _ := db.BeginTx(ctx, nil)
//	_ = queries.WithTx(tx).CreateOrder(ctx, order) // your own statements
//	writer, _ := outbox.CommitWriter(sqlmq.WithTransaction(ctx, tx))
//	_, _ = writer.Write(ctx, messaging.Dispatch{Message: OrderPlaced{...}})
//	if err := tx.Commit(); err != nil { ... } // yours: the messages commit with it
//	_ = writer.Commit()                       // hands them to the processor now
//
// Write stores the rows in tx at once. Commit, called after the caller's
// transaction committed, hands them to the dispatch processor, which
// publishes them at once; Rollback (or Close) forgets them. A transaction
// rolled back takes its rows with it: nothing is published. Rows whose writer
// is never committed are published all the same once their lease runs out
// (LeaseTimeout, then a sweep): a committed transaction's messages are never
// lost, only later.
func WithTransaction(ctx context.Context, tx *sql.Tx) context.Context {
	return context.WithValue(ctx, joinKey{}, tx)
}

// joinedTransaction returns the caller's transaction in ctx, or nil.
func joinedTransaction(ctx context.Context) *sql.Tx {
	tx, _ := ctx.Value(joinKey{}).(*sql.Tx)
	return tx
}

// joinedWriter writes rows into a transaction the caller owns.
type joinedWriter struct {
	outbox *outbox
	ctx    context.Context
	tx     *sql.Tx

	mu   sync.Mutex
	rows []row
	done bool
}

// Write checks the dispatches as the outbox's own writer does and inserts
// them in the caller's transaction at once, leased to this instance.
func (w *joinedWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	normalized, err := w.outbox.accept(w.done, dispatches)
	if err != nil || len(normalized) == 0 {
		return 0, err
	}
	c := w.outbox.config
	created := time.Now()
	leaseUntil := created.Add(c.lease)
	w.outbox.store.readStep(ctx, w.tx) // in the caller's transaction: its pool may have no other connection
	ids, _, err := w.outbox.store.insert(ctx, w.tx, false, normalized, created, c.owner, leaseUntil)
	if err != nil {
		return 0, err
	}
	w.outbox.committing(ids) // until Commit hands them off, or Rollback
	for i, id := range ids {
		w.rows = append(w.rows, row{id: id, dispatch: clone(normalized[i]), created: created, leaseUntil: leaseUntil})
	}
	return len(dispatches), nil
}

// Commit hands the rows written to the dispatch processor; call it once the
// caller's transaction has committed. It never touches the transaction: it
// reads back which of the rows are in the table (none of a transaction
// rolled back, none of one still open) and hands over those. When it cannot
// read them, the processor publishes them once their lease runs out.
func (w *joinedWriter) Commit() error {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return fmt.Errorf("sqlmq: commit after commit or rollback: %w", messaging.ErrClosed)
	}
	w.done = true
	rows := w.rows
	w.rows = nil
	w.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	defer w.outbox.settled(rowIDs(rows)) // after the handoff: what it did not take is not coming
	committed, err := w.outbox.store.stored(w.ctx, rows)
	if err != nil {
		w.outbox.config.logger.Warn(fmt.Sprintf("Unable to read back the [%d] message(s) written in the caller's transaction [%v]; if it committed, they are published when their lease runs out.", len(rows), err),
			"count", len(rows), "error", err)
		return nil
	}
	if len(committed) > 0 {
		w.outbox.config.monitor.MessageStored(len(committed))
		w.outbox.handoff(committed)
	}
	return nil
}

// Rollback forgets the rows written; the caller's transaction, rolled back,
// takes them with it. It never touches the transaction.
func (w *joinedWriter) Rollback() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.outbox.settled(rowIDs(w.rows))
	w.done, w.rows = true, nil
	return nil
}

// Close is Rollback when the writer was not committed.
func (w *joinedWriter) Close() error { return w.Rollback() }
