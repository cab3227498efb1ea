package idempotency_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/idempotency"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/streaming"
)

// duplicates counts the deliveries the guard accepted as duplicates.
type duplicates struct {
	idempotency.NopMonitor
	seen chan struct{}
}

func (d duplicates) Duplicate(string) { d.seen <- struct{}{} }

// The claim is written in the transaction the handler records its work in,
// so the two commit together: the same message delivered twice records one
// shipment.
func ExampleInTransaction() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := os.MkdirTemp("", "idempotency-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	store, err := idempotency.NewSQLStore(db, sqldialect.SQLite)
	if err != nil {
		panic(err)
	}
	if err := store.CreateTable(ctx); err != nil { // creates what is missing; safe on every start
		panic(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE shipments (order_id TEXT)"); err != nil {
		panic(err)
	}

	ship := messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
		tx := messaging.TransactionSlotFrom(ctx).Tx // the batch's transaction
		for _, d := range messaging.DeliveriesFrom(ctx) {
			if _, err := tx.ExecContext(ctx, "INSERT INTO shipments (order_id) VALUES (?)", d.MessageID); err != nil {
				panic(err)
			}
		}
	})
	monitor := duplicates{seen: make(chan struct{}, 1)}
	quiet := slog.New(slog.DiscardHandler)
	worker := messaging.Chain(
		sqltx.Middleware(db, sqltx.Options.Logger(quiet)),
		idempotency.InTransaction(store, idempotency.Options.Monitor(monitor)),
	)(ship)

	broker := memory.New()
	defer broker.Close()
	consumer := streaming.New(broker, streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription("orders", streaming.SubscriptionOptions.AddWorkers(worker))))
	go consumer.Listen()
	defer consumer.Close()
	if err := consumer.Started(ctx); err != nil {
		panic(err)
	}
	for range 2 { // the same message twice
		if err := broker.Publish(ctx, messaging.Dispatch{RoutingKey: "orders", MessageID: "order-7", Payload: []byte("{}")}); err != nil {
			panic(err)
		}
	}
	select {
	case <-monitor.seen:
	case <-ctx.Done():
		panic("the second copy was not found a duplicate")
	}
	var shipments int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM shipments").Scan(&shipments); err != nil {
		panic(err)
	}
	fmt.Println("shipments recorded:", shipments)
	// Output: shipments recorded: 1
}
