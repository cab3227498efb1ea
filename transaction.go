package messaging

import (
	"context"
	"database/sql"
)

// TransactionSlot carries the SQL transaction an outbox CommitWriter began back
// to the code that asked for the writer, through the context. The transactional
// handler decorator and an HTTP handler writing a row plus a message use it the
// same way: put a slot in the context, open the CommitWriter with that context,
// then read Tx. Decorators between them (serialization) need not know about it.
type TransactionSlot struct {
	// Tx is the live transaction; the writer that filled it commits or rolls it
	// back on Commit or Rollback.
	Tx *sql.Tx
}

type transactionSlotKey struct{}

// WithTransactionSlot returns a context carrying a new, empty slot, and the slot.
func WithTransactionSlot(ctx context.Context) (context.Context, *TransactionSlot) {
	slot := &TransactionSlot{}
	return context.WithValue(ctx, transactionSlotKey{}, slot), slot
}

// TransactionSlotFrom returns the slot in ctx, or nil when there is none.
func TransactionSlotFrom(ctx context.Context) *TransactionSlot {
	slot, _ := ctx.Value(transactionSlotKey{}).(*TransactionSlot)
	return slot
}
