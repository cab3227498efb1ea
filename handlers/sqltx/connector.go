package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
)

// errPublishesNothing is what the batch's writer answers: this transaction
// holds SQL statements only.
var errPublishesNothing = errors.New("sqltx: the batch's transaction publishes nothing; use handlers/transactional over an outbox (sqlmq) to write messages with it")

// txConnector is the connector handlers/transactional runs sqltx's batches
// on: its commit writer is one SQL transaction on db, put in the batch's
// transaction slot, that writes no message.
type txConnector struct {
	db        *sql.DB
	isolation sql.IsolationLevel
}

// Connect returns a connection that holds nothing.
func (c txConnector) Connect(context.Context) (messaging.Connection, error) { return c, nil }

// Close does nothing: the database belongs to the caller.
func (txConnector) Close() error { return nil }

// Reader fails: sqltx only runs transactions.
func (txConnector) Reader(context.Context) (messaging.Reader, error) { return nil, errPublishesNothing }

// Writer fails: sqltx only runs transactions.
func (txConnector) Writer(context.Context) (messaging.Writer, error) { return nil, errPublishesNothing }

// CommitWriter begins the batch's transaction and puts it in ctx's slot.
func (c txConnector) CommitWriter(ctx context.Context) (messaging.CommitWriter, error) {
	tx, err := c.db.BeginTx(ctx, &sql.TxOptions{Isolation: c.isolation})
	if err != nil {
		return nil, fmt.Errorf("%w; is the database reachable?", err)
	}
	if slot := messaging.TransactionSlotFrom(ctx); slot != nil {
		slot.Tx = tx
	}
	return txWriter{ctx: ctx, tx: tx}, nil
}

// txWriter is one batch's SQL transaction as a CommitWriter.
type txWriter struct {
	ctx context.Context
	tx  *sql.Tx
}

// Write refuses: the transaction holds SQL statements only.
func (txWriter) Write(context.Context, ...messaging.Dispatch) (int, error) {
	return 0, errPublishesNothing
}

// Commit commits the transaction. A failed Commit ends it (database/sql rolls
// it back).
func (w txWriter) Commit() error {
	err := w.tx.Commit()
	if errors.Is(err, sql.ErrTxDone) && w.ctx.Err() != nil {
		// database/sql rolled the transaction back when ctx ended, and Commit
		// may find it done before it looks at ctx: report the cause.
		return fmt.Errorf("%w (%w)", w.ctx.Err(), err)
	}
	return err
}

// Rollback rolls the transaction back; one already ended (committed, or rolled
// back when ctx ended) is not an error.
func (w txWriter) Rollback() error {
	if err := w.tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

// Close rolls back what was not committed.
func (w txWriter) Close() error { return w.Rollback() }
