// Package sqltx runs each batch inside one SQL transaction on a plain *sql.DB,
// for handlers that write to a database and publish nothing (see
// handlers/transactional for handlers that also publish).
//
// It is handlers/transactional over a connector whose commit writer is a bare
// SQL transaction, so both decorators begin, run, roll back, commit and
// classify their failures in one place.
//
// Failure is a panic, after the rollback. Wrap this handler in handlers/retry,
// never the reverse, so a failed batch runs again in a fresh transaction.
package sqltx

import (
	"database/sql"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/transactional"
)

// New returns a Handler that, for each batch, begins a transaction on db, builds
// the batch's handler with factory, calls it, and commits. When beginning fails,
// or the commit fails, it panics with an error wrapping the cause; when the
// handler panics, it rolls back and re-panics with the same value. The handler
// must not commit or roll back the *sql.Tx itself. It is safe for concurrent use.
//
// A transaction that cannot begin is the database's failure, not the batch's:
// that panic is marked with messaging.Outage (unless the context had ended),
// so an outer handlers/retry holds the batch without spending its budget and
// handlers/deadletter never sets it aside. A commit that fails because the
// database did not answer, and a handler's panic with an error that says the
// connection was lost (a server shutdown, a killed connection, a PostgreSQL
// connection exception), are recognised by messaging.IsOutage the same way;
// errors.Is and errors.As still see the cause.
func New(db *sql.DB, factory func(*sql.Tx) messaging.Handler, options ...Option) messaging.Handler {
	c := newConfig(options)
	core := append([]transactional.Option{transactional.Options.Name("sqltx")}, c.core...)
	return transactional.New(txConnector{db: db, isolation: c.isolation}, func(state transactional.State) messaging.Handler {
		return factory(state.Tx)
	}, core...)
}

// Middleware is New as a messaging.Middleware, for messaging.Chain: the inner
// handler is built once and finds each batch's transaction in the context it
// receives, through messaging.TransactionSlotFrom(ctx).Tx, the same place
// handlers/transactional's outbox transaction is found, so a pattern that
// writes in the handler's transaction (an idempotency claim) works under
// either.
func Middleware(db *sql.DB, options ...Option) messaging.Middleware {
	return func(inner messaging.Handler) messaging.Handler {
		return New(db, func(*sql.Tx) messaging.Handler { return inner }, options...)
	}
}
