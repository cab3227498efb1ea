package idempotency

import (
	"context"
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
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/streaming"
)

// TestEachMessagePublishedTwiceHasItsEffectOnce publishes 1,000 messages
// twice each to a queue read by four workers of a streaming consumer, each
// guarded by New over the SQL store on MariaDB: the side effect (a counter
// row per message, in the same database) happens exactly once per message.
// Every 50th message asks for a retry the first time it runs, so a released
// key is claimed again by the retried copy.
func TestEachMessagePublishedTwiceHasItsEffectOnce(t *testing.T) {
	url := testenv.Broker(t)
	db := testenv.MySQL(t)
	const total = 1000
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	queue, exchange, effects := "idem-twice-"+suffix, "idem-twice-x-"+suffix, "idem_effects_"+suffix
	b := backend{name: "MariaDB", dialect: sqldialect.MySQL}
	table := sqlTable(t, b, db)
	if _, err := db.Exec("CREATE TABLE " + effects + " (id VARCHAR(64) PRIMARY KEY, n INT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + effects) })
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })

	store, err := NewSQLStore(db, sqldialect.MySQL, StoreOptions.Table(table), StoreOptions.ClaimTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	monitor := &fakeMonitor{changed: make(chan struct{}, 1)}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var retried sync.Map
	effect := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
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
			if _, err := db.ExecContext(ctx, "INSERT INTO "+effects+" (id, n) VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1", d.MessageID); err != nil {
				panic(err)
			}
		}
	})
	budget := retrypolicy.Fixed(5, 10*time.Millisecond)
	worker := messaging.Chain(
		Middleware(store, Options.InProgressDelay(200*time.Millisecond), Options.Monitor(monitor), Options.Logger(quiet)),
		retry.Middleware(retry.Options.Policy(budget), retry.Options.Logger(quiet)),
	)(effect)

	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	consumer := streaming.New(transport,
		streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(worker, worker, worker, worker),
			streaming.SubscriptionOptions.BatchCapacity(8),
			streaming.SubscriptionOptions.FullDeliveryToHandler(true),
			streaming.SubscriptionOptions.RetryPolicy(budget),
		)),
	)
	listening := make(chan struct{})
	go func() { consumer.Listen(); close(listening) }()
	defer func() {
		_ = consumer.Close()
		select {
		case <-listening:
		case <-time.After(30 * time.Second):
			t.Error("Listen did not return after Close")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	started := time.Now()
	publishTwice(t, ctx, transport, exchange, total)
	published := time.Since(started)

	// Every second copy answered as a duplicate means every first copy's
	// work was done and confirmed.
	monitor.waitFor("duplicate", total, 2*time.Minute)
	elapsed := time.Since(started)
	var rows, sum, most int
	if err := db.QueryRow("SELECT COUNT(*), COALESCE(SUM(n), 0), COALESCE(MAX(n), 0) FROM "+effects).Scan(&rows, &sum, &most); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d messages published twice in %s; handled in %s: %d effects (sum %d, most %d per message); claimed %d, duplicate %d, in progress %d, released %d",
		total, published.Round(time.Millisecond), elapsed.Round(time.Millisecond), rows, sum, most,
		monitor.count("claimed"), monitor.count("duplicate"), monitor.count("in_progress"), monitor.count("released"))
	if rows != total || sum != total || most != 1 {
		t.Fatalf("%d messages have an effect, %d effects in all, at most %d per message; want %d, %d, 1", rows, sum, most, total, total)
	}
	if got := monitor.count("duplicate"); got != total {
		t.Errorf("%d duplicates accepted; want %d", got, total)
	}
	if got := monitor.count("released"); got != total/50 {
		t.Errorf("%d keys released; want the %d retried", got, total/50)
	}
	if got := monitor.count("claimed"); got != total+total/50 {
		t.Errorf("%d claims; want %d (each message once, and each retried one again)", got, total+total/50)
	}
}

func publishTwice(t *testing.T, ctx context.Context, transport messaging.Connector, exchange string, total int) {
	t.Helper()
	conn, err := transport.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	dispatch := func(i, copyOf int) messaging.Dispatch {
		return messaging.Dispatch{Topic: exchange, MessageID: fmt.Sprint("twice-", i), MessageType: "twice",
			Mandatory: true, Payload: fmt.Appendf(nil, `{"copy":%d}`, copyOf)}
	}
	// The first 100 messages' copies side by side (they meet in one batch or
	// in two workers at once: in progress), the others' a pass apart.
	const adjacent = 100
	dispatches := make([]messaging.Dispatch, 0, 2*total)
	for i := range adjacent {
		dispatches = append(dispatches, dispatch(i, 0), dispatch(i, 1))
	}
	for copyOf := range 2 {
		for i := adjacent; i < total; i++ {
			dispatches = append(dispatches, dispatch(i, copyOf))
		}
	}
	for len(dispatches) > 0 {
		n := min(len(dispatches), 250)
		if _, err := writer.Write(ctx, dispatches[:n]...); err != nil {
			t.Fatal(err)
		}
		dispatches = dispatches[n:]
	}
}
