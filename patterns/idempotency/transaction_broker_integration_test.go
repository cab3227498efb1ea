package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/streaming"
)

// TestInTransactionHasEachEffectOnceOverRabbitMQ publishes 1,000 messages
// twice each to a queue read by four workers, each running sqltx.Middleware
// and InTransaction on PostgreSQL (MariaDB and SQLite run InTransaction in
// transaction_integration_test.go, without the broker, to keep this package
// quick); the handler writes its
// effect in the batch's transaction, and every 50th message asks for a retry
// the first time. Each message's effect is in the database exactly once.
func TestInTransactionHasEachEffectOnceOverRabbitMQ(t *testing.T) {
	url := testenv.Broker(t)
	b := backends[1]
	if b.dialect != sqldialect.PostgreSQL {
		t.Fatalf("backends[1] is %s; want PostgreSQL", b.name)
	}
	inTransactionOverRabbitMQ(t, url, b, b.open(t))
}

func inTransactionOverRabbitMQ(t *testing.T, url string, b backend, db *sql.DB) {
	const total = 1000
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	queue, exchange, effects := "idem-tx-"+suffix, "idem-tx-x-"+suffix, "idem_txfx_"+suffix
	table := sqlTable(t, b, db)
	if _, err := db.Exec("CREATE TABLE " + effects + " (id VARCHAR(64) PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + effects) })
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })
	store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table))
	if err != nil {
		t.Fatal(err)
	}
	insert := b.dialect.Rebind("INSERT INTO " + effects + " (id) VALUES (?)")
	var retried sync.Map
	effect := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		tx := messaging.TransactionSlotFrom(ctx).Tx
		for _, message := range messages {
			d := message.(messaging.Delivery)
			var n int
			fmt.Sscanf(d.MessageID, "twice-%d", &n)
			if n%50 == 0 {
				if _, again := retried.LoadOrStore(d.MessageID, true); !again {
					if err := messaging.Retry(ctx, d, errors.New("not yet")); err != nil {
						panic(err)
					}
					continue
				}
			}
			if _, err := tx.ExecContext(ctx, insert, d.MessageID); err != nil {
				panic(err) // a second effect would break the primary key
			}
		}
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	budget := retrypolicy.Fixed(5, 10*time.Millisecond)
	monitor := &fakeMonitor{changed: make(chan struct{}, 1)}
	worker := messaging.Chain(
		retry.Middleware(retry.Options.Policy(budget), retry.Options.Logger(quiet)),
		sqltx.Middleware(db, sqltx.Options.Logger(quiet)),
		InTransaction(store, Options.InProgressDelay(100*time.Millisecond), Options.Monitor(monitor), Options.Logger(quiet)),
	)(effect)

	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	consumer := streaming.New(transport, streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(worker, worker, worker, worker),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(budget),
		)))
	listening := make(chan struct{})
	go func() { consumer.Listen(); close(listening) }()
	defer func() {
		_ = consumer.Close()
		<-listening
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	publishTwice(t, ctx, transport, exchange, total)
	// Every second copy answered as a duplicate means every first copy's
	// transaction, its claim confirmed, committed.
	monitor.waitFor("duplicate", total, time.Minute)
	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + effects).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d messages published twice, handled in %s: %d effects; claimed %d, duplicate %d, in progress %d, released %d",
		b.name, total, time.Since(started).Round(time.Millisecond), rows,
		monitor.count("claimed"), monitor.count("duplicate"), monitor.count("in_progress"), monitor.count("released"))
	if rows != total {
		t.Fatalf("%d messages have their effect; want %d, each once (the primary key refuses a second)", rows, total)
	}
	if got := monitor.count("duplicate"); got < total {
		t.Errorf("%d duplicates accepted; want at least %d", got, total)
	}
}
