package streams_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	_ "modernc.org/sqlite" // the in-process SQLite driver; a service links its own

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/memory"
	"github.com/warrenmq/messaging/patterns/streams"
	"github.com/warrenmq/messaging/sqldialect"
)

// The declaration as a topology plan, printed.
func ExamplePlan() {
	fmt.Print(streams.Plan("orders.log", streams.Retention{MaxAge: 7 * 24 * time.Hour, MaxBytes: 10 << 30}))
	// Output: declare queue orders.log (stream, durable, x-max-age=7D, x-max-length-bytes=10737418240)
}

// The x-max-age spellings.
func ExampleMaxAgeText() {
	for _, age := range []time.Duration{7 * 24 * time.Hour, 24 * time.Hour, 90 * time.Minute, time.Hour} {
		fmt.Println(streams.MaxAgeText(age))
	}
	// Output:
	// 7D
	// 1D
	// 90m
	// 1h
}

// projection applies each order and saves the stream's next offset in the
// same SQL transaction, so a restart resumes one past what was applied.
func projection(db *sql.DB, checkpoints *streams.Checkpoints) messaging.Handler {
	return messaging.HandleEach(func(ctx context.Context, order messaging.Delivery) error {
		offset, ok := streams.OffsetOf(order)
		if !ok {
			return messaging.Fatalf("message %s carries no stream offset", order.MessageID)
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return messaging.Outage(err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", order.MessageID); err != nil {
			return err
		}
		if err := checkpoints.Save(ctx, tx, "projection-a", offset+1); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// A projection that resumes from its checkpoint (doc/streams.md): From
// before Read, Save in the transaction that applies the message. The
// checkpoints live in SQLite here; checkpoint_integration_test.go runs the
// same on RabbitMQ and MariaDB. The in-memory broker has no streams, so
// Read refuses it before declaring anything.
func Example_checkpoint() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	checkpoints, err := streams.NewCheckpoints(db, sqldialect.SQLite)
	if err == nil {
		err = checkpoints.CreateTable(ctx)
	}
	if _, e := db.ExecContext(ctx, "CREATE TABLE orders (id TEXT PRIMARY KEY)"); err == nil {
		err = e
	}
	if err != nil {
		fmt.Println(err)
		return
	}

	from, _ := checkpoints.From(ctx, "projection-a", streams.FromFirst())
	fmt.Println("first start from:", from)

	// What the reader hands the handler: deliveries carrying x-stream-offset.
	handler := projection(db, checkpoints)
	for offset, id := range []string{"o-1", "o-2"} {
		delivery := messaging.Delivery{MessageID: id, Headers: map[string]any{streams.OffsetArgument: int64(offset)}}
		handler.Handle(messaging.WithDeliveries(ctx, []messaging.Delivery{delivery}), delivery)
	}

	from, _ = checkpoints.From(ctx, "projection-a", streams.FromFirst())
	fmt.Println("restart from:", from)

	_, err = streams.Read(ctx, memory.New(), "orders.log", handler,
		streams.Options.From(from), streams.Options.Prefetch(100), streams.Options.Name("projection-a"),
		streams.Options.FullDelivery(true)) // the handler takes messaging.Delivery values
	fmt.Println("on memory:", errors.Is(err, streams.ErrUnsupported))
	// Output:
	// first start from: first
	// restart from: offset 2
	// on memory: true
}
