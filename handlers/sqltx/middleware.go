package sqltx

import (
	"context"
	"database/sql"

	"github.com/warrenmq/messaging"
)

// Middleware is New as a messaging.Middleware, for messaging.Chain: the inner
// handler is built once and finds each batch's transaction in the context it
// receives, through messaging.TransactionSlotFrom(ctx).Tx, the same place
// handlers/transactional's outbox transaction is found, so a pattern that
// writes in the handler's transaction (an idempotency claim) works under
// either.
func Middleware(db *sql.DB, options ...Option) messaging.Middleware {
	return func(inner messaging.Handler) messaging.Handler {
		return New(db, func(tx *sql.Tx) messaging.Handler {
			return txHandler{inner: inner, tx: tx}
		}, options...)
	}
}

// txHandler hands inner the batch's transaction in a transaction slot.
type txHandler struct {
	inner messaging.Handler
	tx    *sql.Tx
}

func (h txHandler) Handle(ctx context.Context, messages ...any) {
	ctx, slot := messaging.WithTransactionSlot(ctx)
	slot.Tx = h.tx
	h.inner.Handle(ctx, messages...)
}
