package sqltx_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"

	_ "modernc.org/sqlite" // the in-process SQLite driver; a service links its own

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/sqltx"
)

type PaymentReceived struct {
	OrderID string
	Cents   int
}

// Each batch runs in one SQL transaction: every row of the batch commits
// together, and a failure rolls all of them back (an outer handlers/retry
// then runs the batch again in a new transaction).
func ExampleNew() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	if _, err := db.Exec("CREATE TABLE payments (order_id TEXT PRIMARY KEY, cents INTEGER NOT NULL CHECK (cents > 0))"); err != nil {
		fmt.Println(err)
		return
	}

	handler := sqltx.New(db, func(tx *sql.Tx) messaging.Handler {
		return messaging.HandleEach(func(ctx context.Context, payment PaymentReceived) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO payments (order_id, cents) VALUES (?, ?)", payment.OrderID, payment.Cents)
			return err
		})
	}, sqltx.Options.Logger(slog.New(slog.DiscardHandler)))

	ctx := context.Background()
	handler.Handle(ctx, PaymentReceived{"o-1", 500}, PaymentReceived{"o-2", 700})
	fmt.Println("payments after the first batch:", count(db))

	func() {
		defer func() { fmt.Println("second batch failed:", recover() != nil) }()
		handler.Handle(ctx, PaymentReceived{"o-3", 900}, PaymentReceived{"o-4", 0}) // o-4 breaks the CHECK
	}()
	fmt.Println("payments after the second batch:", count(db)) // o-3 was rolled back with it
	// Output:
	// payments after the first batch: 2
	// second batch failed: true
	// payments after the second batch: 2
}

func count(db *sql.DB) (n int) {
	_ = db.QueryRow("SELECT COUNT(*) FROM payments").Scan(&n)
	return n
}
