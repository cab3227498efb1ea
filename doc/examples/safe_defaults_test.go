package examples_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
	"github.com/warrenmq/messaging/streaming"
)

// poisonOrder is the order whose handling always fails.
const poisonOrder = 13

// countingShipper is the quick start's handler shape, counting each shipment
// in the order's row; it fails for ever on poisonOrder, as a bug would.
type countingShipper struct {
	tx     *sql.Tx
	writer messaging.Writer
	table  string
}

func (h *countingShipper) Handle(ctx context.Context, messages ...any) {
	for _, message := range messages {
		placed := message.(quickPlaced)
		if placed.OrderID == poisonOrder {
			panic(fmt.Errorf("order %d cannot be shipped", placed.OrderID))
		}
		if _, err := h.tx.ExecContext(ctx, "UPDATE "+h.table+" SET shipped = shipped + 1 WHERE id = ?", placed.OrderID); err != nil {
			panic(err)
		}
		if _, err := h.writer.Write(ctx, messaging.Dispatch{Message: quickShipped{OrderID: placed.OrderID}}); err != nil {
			panic(err)
		}
	}
}

// TestQuickStartIsSafeByDefault wires smarty/messaging v4's quick start as written
// (retry around transactional, three workers, batches of 64, no settlement
// decorator, no flags) and feeds it 100 order-placed messages, one of them
// not JSON and one that always fails in the handler: the 98 others are
// shipped exactly once, the undecodable one is parked and the failing one is
// dead-lettered after the default budget, within a bounded time.
func TestQuickStartIsSafeByDefault(t *testing.T) {
	url := testenv.Broker(t)
	db := testenv.MySQL(t)
	t.Logf("services locked at %s", time.Now().Format(time.StampMilli))
	suffix := strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	orders, outboxTable := "qs_safe_orders_"+suffix, "qs_safe_outbox_"+suffix
	placedType, shippedType := "qs-safe-placed-"+suffix, "qs-safe-shipped-"+suffix
	queue, watch := "qs-safe-orders-"+suffix, "qs-safe-watch-"+suffix
	const total, undecodable = 100, 57

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	mustExec(t, db, "CREATE TABLE "+orders+" (id bigint unsigned NOT NULL PRIMARY KEY, shipped int NOT NULL DEFAULT 0)")
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + orders) })
	for id := 1; id <= total; id++ {
		mustExec(t, db, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", orders, id))
	}
	ddl, err := sqlmq.TableSchema(sqldialect.MySQL, outboxTable)
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(ddl) {
		mustExec(t, db, statement)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + outboxTable) })

	raw := rawBroker(t, url)
	raw.declare(t, placedType, shippedType, watch)
	defer raw.cleanup(placedType, shippedType, watch, queue, queue+".dlq", queue+".parked")

	// The quick start, as written.
	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Monitor(rabbitmq.NopMonitor{}))
	defer transport.Close()
	outbox, dispatcher := sqlmq.New(transport,
		sqlmq.Options.StorageHandle(db),
		sqlmq.Options.Table(outboxTable),
		sqlmq.Options.Monitor(sqlmq.NopMonitor{}),
	)
	readTypes := map[string]reflect.Type{placedType: reflect.TypeOf(quickPlaced{})}
	writeTypes := map[reflect.Type]string{
		reflect.TypeOf(quickPlaced{}):  placedType,
		reflect.TypeOf(quickShipped{}): shippedType,
	}
	encodedTransport := serialization.New(transport, serialization.Options.ReadTypes(readTypes), serialization.Options.WriteTypes(writeTypes))
	encodedOutbox := serialization.New(outbox, serialization.Options.ReadTypes(readTypes), serialization.Options.WriteTypes(writeTypes))
	handler := retry.New(
		transactional.New(encodedOutbox, func(state transactional.State) messaging.Handler {
			return &countingShipper{tx: state.Tx, writer: state.Writer, table: orders}
		}),
		retry.Options.Backoff(time.Second),
		retry.Options.MaxBackoff(time.Minute),
	)
	consumer := streaming.New(encodedTransport,
		streaming.Options.Subscriptions(
			streaming.NewSubscription(queue,
				streaming.SubscriptionOptions.Topics(placedType),
				streaming.SubscriptionOptions.AddWorkers(handler, handler, handler),
				streaming.SubscriptionOptions.BatchCapacity(64),
			),
		),
	)
	listening := make(chan struct{}, 2)
	go func() { dispatcher.Listen(); listening <- struct{}{} }()
	go func() { consumer.Listen(); listening <- struct{}{} }()
	defer func() {
		_ = consumer.Close()
		_ = dispatcher.Close()
		for range 2 {
			select {
			case <-listening:
			case <-time.After(30 * time.Second):
				t.Error("Listen did not return after Close")
			}
		}
	}()

	raw.awaitConsumer(t, queue, 30*time.Second)
	t.Logf("consumer up at %s", time.Now().Format(time.StampMilli))
	started := time.Now()
	raw.publishOrders(t, ctx, placedType, total, undecodable)

	const bound = 90 * time.Second
	var shipped, parked, dead int
	testenv.Poll(bound, func() bool {
		if err := db.QueryRow("SELECT COUNT(*) FROM " + orders + " WHERE shipped > 0").Scan(&shipped); err != nil {
			t.Fatal(err)
		}
		parked, dead = raw.depth(t, queue+".parked"), raw.depth(t, queue+".dlq")
		return shipped == total-2 && parked == 1 && dead == 1
	})
	elapsed := time.Since(started)
	if shipped != total-2 || parked != 1 || dead != 1 {
		t.Fatalf("after %s: %d of %d orders shipped, %d parked, %d dead-lettered; want %d, 1, 1", bound, shipped, total, parked, dead, total-2)
	}
	t.Logf("98 shipped, 1 parked, 1 dead-lettered in %s", elapsed.Round(time.Millisecond))

	rows, err := db.Query("SELECT id, shipped FROM " + orders + " WHERE shipped <> 1")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, count int
		if err := rows.Scan(&id, &count); err != nil {
			t.Fatal(err)
		}
		if (id == poisonOrder || id == undecodable) && count == 0 {
			continue
		}
		t.Errorf("order %d was shipped %d times; want once", id, count)
	}

	parkedCopy := raw.get(t, queue+".parked")
	if parkedCopy.MessageId != fmt.Sprint("order-", undecodable) || !strings.Contains(fmt.Sprint(parkedCopy.Headers["x-acemq-error"]), "could not be decoded") {
		t.Errorf("parked %s with reason %q; want order-%d, could not be decoded", parkedCopy.MessageId, parkedCopy.Headers["x-acemq-error"], undecodable)
	}
	deadCopy := raw.get(t, queue+".dlq")
	if deadCopy.MessageId != fmt.Sprint("order-", poisonOrder) || !strings.Contains(fmt.Sprint(deadCopy.Headers["x-acemq-error"]), "cannot be shipped") {
		t.Errorf("dead-lettered %s with reason %q; want order-%d", deadCopy.MessageId, deadCopy.Headers["x-acemq-error"], poisonOrder)
	}

	// Every shipped event arrives once (the outbox is at least once; here
	// nothing fails, so exactly once).
	seen := map[uint64]int{}
	for len(seen) < total-2 {
		var event quickShipped
		if err := json.Unmarshal(raw.receive(t, watch, 30*time.Second), &event); err != nil {
			t.Fatal(err)
		}
		seen[event.OrderID]++
	}
	t.Logf("events received at %s", time.Now().Format(time.StampMilli))
	for id, count := range seen {
		if count != 1 {
			t.Errorf("order-shipped %d published %d times", id, count)
		}
	}
}

// awaitConsumer waits until queue has a consumer, so what is published next
// is routed to it.
func (r *rawAMQP) awaitConsumer(t *testing.T, queue string, limit time.Duration) {
	t.Helper()
	testenv.Eventually(t, limit, "a consumer on "+queue, func() bool {
		ch, err := r.conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		state, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		if err != nil {
			return false // the failed look closed the channel
		}
		_ = ch.Close()
		return state.Consumers > 0
	})
}

// publishOrders publishes orders 1..total to the placed exchange, confirmed;
// order undecodable is not JSON.
func (r *rawAMQP) publishOrders(t *testing.T, ctx context.Context, placed string, total, undecodable int) {
	t.Helper()
	if err := r.ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= total; id++ {
		body := fmt.Appendf(nil, `{"OrderID":%d}`, id)
		if id == undecodable {
			body = []byte("this is not JSON")
		}
		confirmation, err := r.ch.PublishWithDeferredConfirmWithContext(ctx, placed, "", false, false, amqp.Publishing{
			MessageId: fmt.Sprint("order-", id), Type: placed, ContentType: "application/json",
			DeliveryMode: amqp.Persistent, Body: body,
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := confirmation.WaitContext(ctx); err != nil || !ok {
			t.Fatalf("order %d not confirmed: %v", id, err)
		}
	}
}

func (r *rawAMQP) depth(t *testing.T, queue string) int {
	t.Helper()
	ch, err := r.conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	state, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		return 0 // not declared yet
	}
	return state.Messages
}

func (r *rawAMQP) get(t *testing.T, queue string) amqp.Delivery {
	t.Helper()
	delivery, ok, err := r.ch.Get(queue, true)
	if err != nil || !ok {
		t.Fatalf("get from %s: %v, %v", queue, ok, err)
	}
	return delivery
}
