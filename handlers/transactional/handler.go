// Package transactional runs each batch inside one CommitWriter: what the handler
// writes is committed together after it returns, or rolled back when anything
// fails. Over an outbox connector (sqlmq) the CommitWriter also begins a SQL
// transaction, which the handler receives as State.Tx, so its own database
// writes and its outgoing messages commit together or not at all.
//
// Failure is a panic, after the rollback. Wrap this handler in handlers/retry,
// never the reverse: retry recovers the panic and runs the batch again in a
// fresh transaction, whereas a retry inside the transaction would re-run the
// handler on a transaction that may already be broken.
package transactional

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/redial"
)

// State is what the factory receives for one batch.
type State struct {
	// Tx is the live SQL transaction the connector's CommitWriter began (the
	// outbox's), or nil when the connector is not an outbox. The handler must not
	// commit or roll it back.
	Tx *sql.Tx
	// Writer writes into the batch's transaction. Its Close does nothing: the
	// decorator commits, rolls back and closes the underlying writer.
	Writer messaging.Writer
}

// Handler is the decorator New returns. It is safe for concurrent use by several
// workers; they share one connection and each batch has its own CommitWriter.
type Handler struct {
	link    *redial.Link // the connection every worker's batches share
	factory func(State) messaging.Handler
	config  config
}

// New returns a Handler that, for each batch, opens a CommitWriter on connector
// (keeping one connection across batches), builds the batch's handler with
// factory, calls it, and commits. When the handler panics, it rolls back and
// closes only that batch's writer and re-panics with the handler's own value;
// the shared connection, and the other workers' batches on it, are untouched.
// When connecting, opening the writer, or the commit fails, it also closes the
// connection so the next batch redials, and panics with an error wrapping the
// cause.
//
// A transaction that cannot begin is the dependency's failure, not the
// batch's: nothing of the batch has run yet, so that panic is marked with
// messaging.Outage (unless the cause is marked messaging.Fatal, or the
// context had ended: then the failure is the shutdown's), and an outer
// handlers/retry holds the batch without spending its budget while
// handlers/deadletter never sets it aside. A commit that fails is an outage
// only when the database or the broker did not answer (messaging.IsOutage
// recognises a lost connection or database in the commit's error); any other
// failure (a deferred constraint, a serialization failure, a message the
// outbox or the broker refused) may be the messages' own and spends their
// budget. A handler's own panic is re-panicked unchanged: messaging.IsOutage
// recognises one that says the database connection was lost (a server
// shutdown, a killed connection, a PostgreSQL connection exception) without a
// mark.
//
// The returned value also implements io.Closer, which closes the kept
// connection; closing the connector does the same.
func New(connector messaging.Connector, factory func(State) messaging.Handler, options ...Option) messaging.Handler {
	c := newConfig(options)
	return &Handler{link: redial.New(connector, c.name), factory: factory, config: c}
}

var _ io.Closer = (*Handler)(nil)

// Handle runs messages in one transaction; see New.
func (h *Handler) Handle(ctx context.Context, messages ...any) {
	ctx, slot := messaging.WithTransactionSlot(ctx)

	connection, writer, err := h.begin(ctx)
	h.config.monitor.TransactionStarted(err)
	if err != nil {
		h.discard(connection)
		panic(beginFailed(ctx, err))
	}

	state := State{Tx: slot.Tx, Writer: boundWriter{writer: writer}}
	if failed, value := h.run(ctx, state, messages); failed {
		// Only this batch is abandoned: the connection is shared by every
		// worker, and closing it would roll back or fail their batches too.
		h.rollback(ctx, writer)
		h.closeWriter(ctx, writer)
		panic(value)
	}

	err = writer.Commit()
	h.config.monitor.TransactionCommitted(err)
	if err != nil {
		h.abandon(ctx, connection, writer)
		panic(fmt.Errorf("%s: commit %d message(s) after the handler succeeded: %w; the batch was rolled back and will run again", h.config.name, len(messages), err))
	}
	h.closeWriter(ctx, writer)
}

// beginFailed marks err, a failure to begin a batch's transaction, with
// messaging.Outage: nothing of the batch has run, so its messages are not to
// blame. It leaves err as it is when it is marked messaging.Fatal, and when the
// context had already ended (the failure is the shutdown's).
func beginFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil || messaging.IsFatal(err) {
		return err
	}
	return messaging.Outage(err)
}

// abandon rolls back the batch, closes its writer, then closes the connection
// so the next batch redials. It is for a failed commit only: the connection
// itself is then suspect.
func (h *Handler) abandon(ctx context.Context, connection messaging.Connection, writer messaging.CommitWriter) {
	h.rollback(ctx, writer)
	h.closeWriter(ctx, writer)
	h.discard(connection)
}

// begin returns the kept connection (dialling when there is none) and a new
// CommitWriter on it.
func (h *Handler) begin(ctx context.Context) (messaging.Connection, messaging.CommitWriter, error) {
	connection, err := h.link.Connection(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w; is the broker or database reachable?", err)
	}
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		return connection, nil, fmt.Errorf("%s: begin the batch's transaction: %w", h.config.name, err)
	}
	if writer == nil {
		return connection, nil, fmt.Errorf("%s: the connection returned a nil commit writer", h.config.name)
	}
	return connection, writer, nil
}

// run builds the batch's handler and calls it, reporting whether it panicked and
// with what.
func (h *Handler) run(ctx context.Context, state State, messages []any) (failed bool, value any) {
	defer func() {
		if failed {
			value = recover()
		}
	}()
	failed = true
	handler := h.factory(state)
	if handler == nil {
		panic(fmt.Errorf("%s: the factory returned a nil handler", h.config.name))
	}
	handler.Handle(ctx, messages...)
	failed = false
	return false, nil
}

func (h *Handler) rollback(ctx context.Context, writer messaging.CommitWriter) {
	err := writer.Rollback()
	h.config.monitor.TransactionRolledBack(err)
	if err != nil {
		h.config.logger.WarnContext(ctx, "Unable to roll back the batch's transaction; its writer is closed, which discards what it held.", slog.Any("error", err))
	}
}

func (h *Handler) closeWriter(ctx context.Context, writer messaging.CommitWriter) {
	if err := writer.Close(); err != nil && !errors.Is(err, messaging.ErrClosed) {
		h.config.logger.WarnContext(ctx, "Unable to close the batch's commit writer.", slog.Any("error", err))
	}
}

// discard forgets connection, if it is still the kept one, and closes it so the
// next batch redials.
func (h *Handler) discard(connection messaging.Connection) { h.link.Discard(connection) }

// Close closes the kept connection, if any. Later batches fail with
// messaging.ErrClosed.
func (h *Handler) Close() error { return h.link.Close() }

// boundWriter exposes only Write of the batch's CommitWriter, so the handler
// cannot commit, roll back or close what the decorator owns.
type boundWriter struct {
	writer messaging.CommitWriter
}

// Write writes into the batch's transaction.
func (w boundWriter) Write(ctx context.Context, dispatches ...messaging.Dispatch) (int, error) {
	return w.writer.Write(ctx, dispatches...)
}

// Close does nothing; the decorator closes the underlying writer.
func (boundWriter) Close() error { return nil }
