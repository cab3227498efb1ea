package sqlmq_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the in-process SQLite driver; a service links its own

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// A handler's own row and the message announcing it commit together, in one
// SQL transaction; the dispatcher then publishes the committed row and marks
// it dispatched once the broker confirmed it. SQLite and the in-memory
// broker stand in for MySQL or PostgreSQL and rabbitmq.New(...) here.
func Example() {
	db, cleanup, err := openDatabase()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()

	broker := memory.New()
	defer broker.Close()
	outbox, dispatcher := sqlmq.New(broker,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Dialect(sqldialect.SQLite),
		sqlmq.Options.Logger(slog.New(slog.DiscardHandler)),
	)
	go dispatcher.Listen()
	defer func() { _ = dispatcher.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shipped, err := subscribe(ctx, broker, "order-shipped", "billing.shipped")
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, slot := messaging.WithTransactionSlot(ctx)
	connection, err := outbox.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = connection.Close() }()
	writer, err := connection.CommitWriter(ctx) // begins the transaction, in slot.Tx
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := slot.Tx.ExecContext(ctx, "UPDATE orders SET shipped = 1 WHERE id = ?", 42); err != nil {
		_ = writer.Rollback()
		fmt.Println(err)
		return
	}
	_, _ = writer.Write(ctx, messaging.Dispatch{Topic: "order-shipped", MessageType: "order-shipped",
		ContentType: "application/json", Payload: []byte(`{"OrderID":42}`), Mandatory: true})
	if err := writer.Commit(); err != nil { // the row and the message are stored, or neither
		fmt.Println(err)
		return
	}

	var delivery messaging.Delivery
	if err := shipped.Read(ctx, &delivery); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(delivery.MessageType, string(delivery.Payload))
	var flag int
	_ = db.QueryRow("SELECT shipped FROM orders WHERE id = 42").Scan(&flag)
	fmt.Println("order 42 shipped:", flag)
	// Output:
	// order-shipped {"OrderID":42}
	// order 42 shipped: 1
}

// openDatabase opens a SQLite file with the outbox table and the orders table.
// The library runs no DDL by itself: a service applies sqlmq.Schema with its
// migrations.
func openDatabase() (*sql.DB, func(), error) {
	dir, err := os.MkdirTemp("", "sqlmq-example-")
	if err != nil {
		return nil, nil, err
	}
	// SQLite has one write lock: the writer and the dispatcher wait for it.
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(10000)")
	cleanup := func() {
		if db != nil {
			_ = db.Close()
		}
		_ = os.RemoveAll(dir)
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	statements := append(sqlmq.Statements(sqlmq.Schema(sqldialect.SQLite)),
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, shipped INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO orders (id) VALUES (42)")
	for _, statement := range statements {
		if _, err := db.Exec(statement); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("create tables: %w", err)
		}
	}
	return db, cleanup, nil
}

// subscribe opens a stream on queue, bound to topic, as a consumer would.
func subscribe(ctx context.Context, broker *memory.Broker, topic, queue string) (messaging.Stream, error) {
	connection, err := broker.Connect(ctx)
	if err != nil {
		return nil, err
	}
	reader, err := connection.Reader(ctx)
	if err != nil {
		return nil, err
	}
	return reader.Stream(ctx, messaging.StreamConfig{StreamName: queue, Topics: []string{topic}, EstablishTopology: true, BufferCapacity: 1})
}
