package idempotency

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/streaming"
)

// TestAnOverLongMessageIDIsRefusedAtOnce publishes, as another publisher
// might, a decodable message whose x-acemq-id header is 300 bytes to a
// consumer guarded by the SQL store on MariaDB, under a budget of five
// attempts: the store refuses the key before the database sees it, the
// message is dead-lettered on its first attempt with a reason that names the
// limit, and the handler never runs.
func TestAnOverLongMessageIDIsRefusedAtOnce(t *testing.T) {
	url := testenv.Broker(t)
	db := testenv.MySQL(t)
	queue := testenv.Name(t, "idem-long-id")
	t.Cleanup(func() { testenv.DeleteTopology(url, nil, queue, queue+".dlq", queue+".parked") })
	b := backend{name: "MariaDB", dialect: sqldialect.MySQL}
	store, err := NewSQLStore(db, sqldialect.MySQL, StoreOptions.Table(sqlTable(t, b, db)))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	var ran atomic.Int32
	budget := retrypolicy.Fixed(5, 10*time.Millisecond)
	worker := messaging.Chain(
		Middleware(store, Options.Logger(quiet)),
		retry.Middleware(retry.Options.Policy(budget), retry.Options.Logger(quiet)),
	)(messaging.HandlerFunc(func(context.Context, ...any) { ran.Add(1) }))
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	defer transport.Close()
	consumer := streaming.New(transport, streaming.Options.Logger(quiet),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.AddWorkers(worker),
			streaming.SubscriptionOptions.RetryPolicy(budget))))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	defer func() { _ = consumer.Close(); <-listening }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}

	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	deadLetters, err := ch.Consume(queue+".dlq", "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Repeat("x", 300)
	if err := ch.PublishWithContext(ctx, "", queue, true, false, amqp.Publishing{
		Headers: amqp.Table{"x-acemq-id": id}, ContentType: "application/json", Body: []byte(`{}`),
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-deadLetters:
		reason := fmt.Sprint(d.Headers["x-acemq-error"])
		if attempt := fmt.Sprint(d.Headers["x-acemq-attempt"]); attempt != "1" {
			t.Errorf("dead-lettered at attempt %s; want 1 (refused at once): %s", attempt, reason)
		}
		if !strings.Contains(reason, "300 characters") || !strings.Contains(reason, "at most 255") {
			t.Errorf("the reason does not name the limit: %s", reason)
		}
		if got := fmt.Sprint(d.Headers["x-acemq-id"]); got != id {
			t.Errorf("the dead-lettered copy's id is %d bytes; want the original 300", len(got))
		}
	case <-ctx.Done():
		t.Fatal("the message with a 300-byte id was not dead-lettered within a minute")
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("the handler ran %d times; want never", n)
	}
}
