// Package sqltx runs each batch inside one SQL transaction on a plain *sql.DB,
// for handlers that write to a database and publish nothing (see
// handlers/transactional for handlers that also publish).
//
// Failure is a panic, after the rollback. Wrap this handler in handlers/retry,
// never the reverse, so a failed batch runs again in a fresh transaction.
package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/dbfault"
)

type handler struct {
	db      *sql.DB
	factory func(*sql.Tx) messaging.Handler
	config  configuration
}

// New returns a Handler that, for each batch, begins a transaction on db, builds
// the batch's handler with factory, calls it, and commits. When beginning fails,
// or the commit fails, it panics with an error wrapping the cause; when the
// handler panics, it rolls back and re-panics with the same value. The handler
// must not commit or roll back the *sql.Tx itself. It is safe for concurrent use.
//
// A transaction that cannot begin or commit is the database's failure, not the
// batch's: that panic is marked with messaging.Outage (unless the context had
// ended), so an outer handlers/retry holds the batch without spending its
// budget and handlers/deadletter never sets it aside. A handler's panic with an
// error that says the connection was lost (go-sql-driver's
// mysql.ErrInvalidConn, a server shutdown, a PostgreSQL connection exception)
// is marked the same way; errors.Is and errors.As still see the handler's error
// through the mark.
func New(db *sql.DB, factory func(*sql.Tx) messaging.Handler, options ...option) messaging.Handler {
	return &handler{db: db, factory: factory, config: newConfiguration(options)}
}

// Handle runs messages in one transaction; see New.
func (h *handler) Handle(ctx context.Context, messages ...any) {
	tx, err := h.db.BeginTx(ctx, &sql.TxOptions{Isolation: h.config.isolation})
	h.config.monitor.TransactionStarted(err)
	if err != nil {
		panic(dbfault.BeginFailed(ctx.Err(), fmt.Errorf("sqltx: begin a transaction: %w; is the database reachable?", err)))
	}

	if failed, value := h.run(ctx, tx, messages); failed {
		h.rollback(ctx, tx)
		panic(dbfault.MarkPanic(value))
	}

	// A failed Commit ends the transaction (database/sql rolls it back), so there
	// is nothing left to roll back here.
	err = tx.Commit()
	if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
		// database/sql rolled the transaction back when ctx ended, and Commit
		// may find it done before it looks at ctx: report the cause.
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	h.config.monitor.TransactionCommitted(err)
	if err != nil {
		panic(dbfault.CommitFailed(ctx.Err(), fmt.Errorf("sqltx: commit the transaction of %d message(s): %w; it was rolled back and the batch will run again", len(messages), err)))
	}
}

func (h *handler) run(ctx context.Context, tx *sql.Tx, messages []any) (failed bool, value any) {
	defer func() {
		if failed {
			value = recover()
		}
	}()
	failed = true
	inner := h.factory(tx)
	if inner == nil {
		panic(errors.New("sqltx: the factory returned a nil handler"))
	}
	inner.Handle(ctx, messages...)
	failed = false
	return false, nil
}

func (h *handler) rollback(ctx context.Context, tx *sql.Tx) {
	err := tx.Rollback()
	if errors.Is(err, sql.ErrTxDone) {
		err = nil // the context ended and database/sql already rolled back
	}
	h.config.monitor.TransactionRolledBack(err)
	if err != nil {
		h.config.logger.WarnContext(ctx, "Unable to roll back the batch's transaction.", slog.Any("error", err))
	}
}
