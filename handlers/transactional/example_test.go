package transactional_test

import (
	"context"
	"database/sql"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
)

type shipOrders struct {
	tx     *sql.Tx
	writer messaging.Writer
}

func (h shipOrders) Handle(ctx context.Context, messages ...any) {
	for range messages {
		if _, err := h.tx.ExecContext(ctx, "UPDATE orders SET shipped = 1 WHERE id = ?", 1); err != nil {
			panic(err) // the decorator rolls back; retry runs the batch again
		}
		if _, err := h.writer.Write(ctx, messaging.Dispatch{Topic: "order-shipped", Payload: []byte(`{}`)}); err != nil {
			panic(err)
		}
	}
}

// Retry wraps transactional, never the reverse: each attempt gets a fresh
// transaction.
func ExampleNew() {
	var encodedOutbox messaging.Connector // serialization.New(sqlmq outbox, ...)

	handler := retry.New(
		transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
			return shipOrders{tx: state.Tx, writer: state.Writer}
		}),
		retry.Options.Backoff(time.Second),
		retry.Options.MaxBackoff(time.Minute),
	)
	_ = handler
}
