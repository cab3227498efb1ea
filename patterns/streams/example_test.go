package streams_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/patterns/streams"
	"github.com/warrenmq/messaging/rabbitmq"
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

// projection applies each order and saves the stream's offset in the same
// SQL transaction, so the pair is effectively once.
type projection struct{ db *sql.DB }

func (p projection) Handle(ctx context.Context, _ ...any) {
	for _, d := range messaging.DeliveriesFrom(ctx) {
		offset, ok := streams.OffsetOf(d)
		if !ok {
			panic(fmt.Errorf("message %s carries no stream offset", d.MessageID))
		}
		tx, err := p.db.BeginTx(ctx, nil)
		if err != nil {
			panic(messaging.Outage(err))
		}
		if _, err = tx.ExecContext(ctx, "INSERT INTO orders (id) VALUES (?)", d.MessageID); err == nil {
			_, err = tx.ExecContext(ctx, "INSERT INTO checkpoints (name, next_offset) VALUES ('projection-a', ?) "+
				"ON DUPLICATE KEY UPDATE next_offset = VALUES(next_offset)", offset+1)
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			_ = tx.Rollback()
			panic(err)
		}
	}
}

// A projection that resumes from its checkpoint (doc/streams.md;
// checkpoint_integration_test.go runs it on RabbitMQ and MariaDB).
func Example_checkpoint() {
	ctx := context.Background()
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/test")
	if err != nil {
		return
	}
	transport := rabbitmq.New(rabbitmq.Options.Address("amqp://guest:guest@127.0.0.1:5672/"))
	defer transport.Close()

	from := streams.FromFirst()
	var next uint64
	switch err := db.QueryRowContext(ctx, "SELECT next_offset FROM checkpoints WHERE name = 'projection-a'").Scan(&next); {
	case err == nil:
		from = streams.FromOffset(next)
	case !errors.Is(err, sql.ErrNoRows):
		return
	}
	reader, err := streams.Read(ctx, transport, "orders.log", projection{db},
		streams.Options.From(from), streams.Options.Prefetch(100), streams.Options.Name("projection-a"))
	if err != nil {
		return
	}
	defer reader.Close()
	// ... until the service stops.
}
