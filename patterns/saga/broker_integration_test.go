package saga

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/retry"
	"github.com/warrenmq/messaging/handlers/sqltx"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/patterns/idempotency"
	"github.com/warrenmq/messaging/rabbitmq"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/streaming"
)

// TestASagaRunsOncePerMessageThroughConnectionKills places 600 orders
// through eight workers running Handler, its claims in each batch's SQL
// transaction on MariaDB (sqltx outside), while every connection is closed
// three times (rabbitmqctl close_all_connections): every saga runs exactly
// once, and every tenth order, whose last step fails, is refunded exactly
// once, although deliveries whose sagas had finished come back after each
// kill.
func TestASagaRunsOncePerMessageThroughConnectionKills(t *testing.T) {
	url := testenv.Disrupt(t)
	db := testenv.MySQL(t)
	const total = 600
	queue, exchange := testenv.Name(t, "saga-kills"), testenv.Name(t, "saga-kills-x")
	t.Cleanup(func() { testenv.DeleteTopology(url, []string{exchange}, queue, queue+".dlq", queue+".parked") })
	store := claimTable(t, db)
	p := &placements{reserved: map[string]int{}, refunded: map[string]int{}, progress: make(chan int, total*2)}
	placeOrder, err := New("place-order", []Step[placedOrder]{
		{Name: "reserve-stock", Do: p.reserve, Undo: p.release},
		{Name: "take-payment", Do: p.charge, Undo: p.refund},
		{Name: "ship", Do: p.ship},
	})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	budget := retrypolicy.Fixed(5, 10*time.Millisecond)
	worker := messaging.Chain(
		p.countCameBack,
		retry.Middleware(retry.Options.Policy(budget), retry.Options.Logger(quiet)),
		sqltx.Middleware(db, sqltx.Options.Logger(quiet)),
	)(Handler(placeOrder, store, idempotency.Options.Logger(quiet), idempotency.Options.InProgressDelay(100*time.Millisecond)))

	transport := rabbitmq.New(rabbitmq.Options.Address(url), rabbitmq.Options.Logger(quiet))
	t.Cleanup(func() { _ = transport.Close() })
	types := map[string]reflect.Type{"saga.order": reflect.TypeOf(placedOrder{})}
	encoded := serialization.New(transport, serialization.Options.ReadTypes(types), serialization.Options.Logger(quiet),
		serialization.Options.WriteTypes(map[reflect.Type]string{reflect.TypeOf(placedOrder{}): "saga.order"}))
	workers := []messaging.Handler{worker, worker, worker, worker, worker, worker, worker, worker}
	opened := &openings{}
	consumer := streaming.New(encoded, streaming.Options.Logger(quiet), streaming.Options.Monitor(opened),
		streaming.Options.Subscriptions(streaming.NewSubscription(queue,
			streaming.SubscriptionOptions.Topics(exchange),
			streaming.SubscriptionOptions.AddWorkers(workers...),
			streaming.SubscriptionOptions.BatchCapacity(4),
			streaming.SubscriptionOptions.RetryPolicy(budget),
			streaming.SubscriptionOptions.ReconnectDelay(100*time.Millisecond))))
	listening := make(chan struct{})
	go func() { defer close(listening); consumer.Listen() }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := consumer.Started(ctx); err != nil {
		t.Fatal(err)
	}
	publish(t, ctx, encoded, exchange, total)

	for _, at := range []int{total / 4, total / 2, 3 * total / 4} {
		p.holdAt(at)
		p.waitFor(t, ctx, at)
		testenv.Rabbitmqctl(t, "close_all_connections", "saga test disruption")
		p.letGo()
	}
	p.waitFor(t, ctx, total)
	drained := waitForEmpty(t, url, queue, time.Minute)
	if err := consumer.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	<-listening
	t.Logf("the consumer opened its stream %d times", opened.count())
	p.check(t, total)
	if n := p.cameBack.Load(); n == 0 {
		t.Errorf("no delivery came back after its saga had run: the kills tested nothing")
	} else {
		t.Logf("%d deliveries came back after their saga had run", n)
	}
	if !drained {
		t.Errorf("%s still held messages a minute after every saga ran", queue)
	}
}

type placedOrder struct{ ID string }

// openings counts the consumer's streams opened: one, and one after each kill.
type openings struct {
	streaming.NopMonitor
	mu sync.Mutex
	n  int
}

func (o *openings) StreamOpened(_ string, err error) {
	if err == nil {
		o.mu.Lock()
		o.n++
		o.mu.Unlock()
	}
}

func (o *openings) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// placements counts what each order's saga did.
type placements struct {
	mu       sync.Mutex
	reserved map[string]int
	refunded map[string]int
	progress chan int // the number of orders reserved so far, after each
	// While hold is not nil, a saga that reserves the holdFrom-th order or a
	// later one waits on it before its next step: when the test kills the
	// connections, sagas are running and the batches they are part of, some
	// of whose sagas have finished, are not yet acknowledged.
	hold     chan struct{}
	holdFrom int
	cameBack atomic.Int64 // deliveries handed to the worker after their saga had run
}

// countCameBack counts the deliveries of a batch whose saga had already run.
func (p *placements) countCameBack(next messaging.Handler) messaging.Handler {
	return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		p.mu.Lock()
		for _, m := range messages {
			if p.reserved[m.(placedOrder).ID] > 0 {
				p.cameBack.Add(1)
			}
		}
		p.mu.Unlock()
		next.Handle(ctx, messages...)
	})
}

func (p *placements) reserve(_ context.Context, o placedOrder) error {
	p.mu.Lock()
	p.reserved[o.ID]++
	if p.reserved[o.ID] == 1 {
		p.progress <- len(p.reserved)
	}
	var hold chan struct{}
	if len(p.reserved) >= p.holdFrom {
		hold = p.hold
	}
	p.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return nil
}

// holdAt makes the sagas that reserve the n-th order and later ones wait
// until letGo.
func (p *placements) holdAt(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold, p.holdFrom = make(chan struct{}), n
}

func (p *placements) letGo() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.hold)
	p.hold = nil
}

func (p *placements) release(context.Context, placedOrder) error { return nil }

func (p *placements) charge(context.Context, placedOrder) error { return nil }

func (p *placements) refund(_ context.Context, o placedOrder) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refunded[o.ID]++
	return nil
}

// ship fails for every tenth order, so its payment is refunded.
func (p *placements) ship(_ context.Context, o placedOrder) error {
	var n int
	fmt.Sscanf(o.ID, "order-%d", &n)
	if n%10 == 0 {
		return errors.New("the courier refused it")
	}
	return nil
}

func (p *placements) waitFor(t *testing.T, ctx context.Context, reserved int) {
	t.Helper()
	for {
		select {
		case n := <-p.progress:
			if n >= reserved {
				return
			}
		case <-ctx.Done():
			p.mu.Lock()
			defer p.mu.Unlock()
			t.Fatalf("%d of the orders reached their saga in time; waited for %d", len(p.reserved), reserved)
		}
	}
}

func (p *placements) check(t *testing.T, total int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	twice, refundedTwice := 0, 0
	for i := range total {
		id := fmt.Sprint("order-", i)
		if p.reserved[id] != 1 {
			twice++
		}
		want := 0
		if i%10 == 0 {
			want = 1
		}
		if p.refunded[id] != want {
			refundedTwice++
			t.Logf("%s: saga ran %d times, refunded %d times; want once, %d", id, p.reserved[id], p.refunded[id], want)
		}
	}
	t.Logf("%d orders: %d sagas ran other than once, %d orders refunded other than as they should", total, twice, refundedTwice)
	if twice > 0 || refundedTwice > 0 {
		t.Fatalf("%d sagas did not run exactly once and %d orders were not refunded exactly as often as they should", twice, refundedTwice)
	}
}

// claimTable creates a fresh idempotency table on MariaDB.
func claimTable(t *testing.T, db *sql.DB) *idempotency.SQLStore {
	t.Helper()
	table := "saga_claims_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	store, err := idempotency.NewSQLStore(db, sqldialect.MySQL, idempotency.StoreOptions.Table(table))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTable(context.Background()); err != nil {
		t.Fatalf("create %s: %v", table, err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	return store
}

func publish(t *testing.T, ctx context.Context, connector messaging.Connector, exchange string, total int) {
	t.Helper()
	conn, err := connector.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	writer, err := conn.Writer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	dispatches := make([]messaging.Dispatch, total)
	for i := range dispatches {
		id := fmt.Sprint("order-", i)
		dispatches[i] = messaging.Dispatch{Topic: exchange, MessageID: id, Mandatory: true, Message: placedOrder{ID: id}}
	}
	if _, err := writer.Write(ctx, dispatches...); err != nil {
		t.Fatal(err)
	}
}

// waitForEmpty waits, within bound, for queue to hold no ready message: the
// copies a kill returned have been handled. It polls the real broker.
func waitForEmpty(t *testing.T, url, queue string, bound time.Duration) bool {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	var lookErr error
	empty := testenv.Poll(bound, func() bool {
		q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
		lookErr = err
		return err != nil || q.Messages == 0
	})
	if lookErr != nil {
		t.Fatalf("look at %s: %v", queue, lookErr)
	}
	return empty
}
