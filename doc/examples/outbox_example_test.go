package examples_test

import (
	"context"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// Example_outbox stores an order and its message in one SQL transaction
// through the outbox, then lets the dispatch processor publish the row and
// mark it dispatched once the broker confirmed it.
func Example_outbox() {
	db, cleanup, err := openSQLite()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	transport := memory.New()
	defer transport.Close()
	_ = transport.DeclareQueue("invoices", memory.QueueOptions{Durable: true})

	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Dialect(sqldialect.SQLite),
		sqlmq.Options.RetryDelay(100*time.Millisecond),
		sqlmq.Options.Logger(quiet),
	)
	admin := sqlmq.NewAdmin(db, sqlmq.Options.Dialect(sqldialect.SQLite))

	// A slot in the context receives the *sql.Tx the CommitWriter begins.
	ctx, slot := messaging.WithTransactionSlot(context.Background())
	connection, err := outbox.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer connection.Close()
	writer, err := connection.CommitWriter(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := slot.Tx.ExecContext(ctx, "INSERT INTO orders (id, item, status) VALUES ('o-7', 'lamp', 'placed')"); err != nil {
		_ = writer.Rollback()
		fmt.Println(err)
		return
	}
	// The default exchange routes by queue name; the outbox always publishes
	// mandatory, so a message that reaches no queue is never silently lost.
	if _, err := writer.Write(ctx, messaging.Dispatch{RoutingKey: "invoices", MessageType: "invoice-requested", ContentType: "text/plain", Payload: []byte("o-7")}); err != nil {
		_ = writer.Rollback()
		fmt.Println(err)
		return
	}
	if err := writer.Commit(); err != nil { // nil once SQL committed: the row is durable
		fmt.Println(err)
		return
	}
	waiting, _ := admin.Undispatched(ctx)
	fmt.Println("undispatched before the dispatcher runs:", waiting)

	go dispatcher.Listen()
	delivery, err := readOne(transport, "invoices")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("published %q (%s)\n", delivery.Payload, delivery.MessageType)

	// Close the dispatcher after every writer; the first attempt to mark a
	// confirmed row dispatched completes even during Close.
	if err := dispatcher.Close(); err != nil {
		fmt.Println(err)
	}
	waiting, _ = admin.Undispatched(ctx)
	fmt.Println("undispatched after the broker confirmed:", waiting)

	// Output:
	// undispatched before the dispatcher runs: 1
	// published "o-7" (invoice-requested)
	// undispatched after the broker confirmed: 0
}

// readOne reads and acknowledges one delivery from queue, bounded.
func readOne(broker *memory.Broker, queue string) (messaging.Delivery, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var delivery messaging.Delivery
	connection, err := broker.Connect(ctx)
	if err != nil {
		return delivery, err
	}
	defer connection.Close()
	reader, err := connection.Reader(ctx)
	if err != nil {
		return delivery, err
	}
	defer reader.Close()
	stream, err := reader.Stream(ctx, messaging.StreamConfig{StreamName: queue})
	if err != nil {
		return delivery, err
	}
	defer stream.Close()
	if err := stream.Read(ctx, &delivery); err != nil {
		return delivery, err
	}
	return delivery, stream.Acknowledge(ctx, delivery)
}
