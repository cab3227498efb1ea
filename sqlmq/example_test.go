package sqlmq_test

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/sqlmq"
)

// A handler's own row and the message announcing it commit together.
func Example() {
	db, _ := sql.Open("mysql", "app:secret@tcp(127.0.0.1:3306)/app")
	transport := rabbitmq.New(rabbitmq.Options.Address("amqp://guest:guest@127.0.0.1:5672/"))
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Logger(slog.Default()),
	)
	go dispatcher.Listen()
	defer func() { _ = dispatcher.Close() }()

	ctx, slot := messaging.WithTransactionSlot(context.Background())
	connection, err := outbox.Connect(ctx)
	if err != nil {
		return
	}
	defer func() { _ = connection.Close() }()
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		return
	}
	if _, err := slot.Tx.ExecContext(ctx, "UPDATE orders SET shipped = 1 WHERE id = ?", 42); err != nil {
		_ = writer.Rollback()
		return
	}
	_, _ = writer.Write(ctx, messaging.Dispatch{Topic: "order-shipped", MessageType: "order-shipped", ContentType: "application/json", Payload: []byte(`{"OrderID":42}`)})
	_ = writer.Commit() // nil once the row and the message are durable
}
