package transactional_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	_ "modernc.org/sqlite" // the in-process SQLite driver; a service links its own

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

type OrderPlaced struct{ OrderID int }
type OrderShipped struct{ OrderID int }

// Each batch gets one SQL transaction and a writer into the same
// transaction (the outbox's), so the handler's update and the message it
// announces commit together or not at all. Retry wraps transactional, never
// the reverse: each attempt gets a fresh transaction. SQLite and the
// in-memory broker stand in for your database and rabbitmq.New(...) here.
func ExampleNew() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	statements := append(sqlmq.Statements(sqlmq.Schema(sqldialect.SQLite)),
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, shipped INTEGER NOT NULL DEFAULT 0)",
		"INSERT INTO orders (id) VALUES (1)")
	for _, statement := range statements {
		if _, err := db.Exec(statement); err != nil {
			fmt.Println(err)
			return
		}
	}

	quiet := slog.New(slog.DiscardHandler)
	broker := memory.New()
	defer broker.Close()
	outbox, _ := sqlmq.New(broker, sqlmq.Options.StorageHandle(db), sqlmq.Options.Dialect(sqldialect.SQLite), sqlmq.Options.Logger(quiet))
	encodedOutbox := serialization.New(outbox,
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(OrderShipped{}): "order-shipped"}))

	handler := retry.New(
		transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
			return messaging.HandleEach(func(ctx context.Context, order OrderPlaced) error {
				if _, err := state.Writer.Write(ctx, messaging.Dispatch{Message: OrderShipped{OrderID: order.OrderID}}); err != nil {
					return err
				}
				result, err := state.Tx.ExecContext(ctx, "UPDATE orders SET shipped = 1 WHERE id = ?", order.OrderID)
				if err != nil {
					return err
				}
				if n, _ := result.RowsAffected(); n == 0 {
					return messaging.Fatalf("order %d does not exist", order.OrderID) // rolls back the message too
				}
				return nil
			})
		}, transactional.Options.Logger(quiet)),
		retry.Options.Policy(retrypolicy.Fixed(3, time.Millisecond)),
		retry.Options.Logger(quiet),
	)

	ctx := context.Background()
	admin := sqlmq.NewAdmin(db, sqlmq.Options.Dialect(sqldialect.SQLite))
	handler.Handle(ctx, OrderPlaced{OrderID: 1})
	waiting, _ := admin.Undispatched(ctx)
	fmt.Println("messages waiting for the relay:", waiting)

	func() {
		defer func() { fmt.Println("failed:", recover()) }()
		handler.Handle(ctx, OrderPlaced{OrderID: 2})
	}()
	waiting, _ = admin.Undispatched(ctx)
	fmt.Println("messages waiting for the relay:", waiting)
	// Output:
	// messages waiting for the relay: 1
	// failed: order 2 does not exist
	// messages waiting for the relay: 1
}
