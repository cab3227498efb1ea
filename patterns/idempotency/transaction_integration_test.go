package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/sqltx"
)

// txBench runs deliveries through sqltx.Middleware(db) and InTransaction over
// a fresh table, with a handler that records an effect row per message in the
// same transaction and then does what then says.
type txBench struct {
	t       *testing.T
	b       backend
	db      *sql.DB
	effects string
	table   string
	settler *fakeSettler
	handler messaging.Handler
	then    func(ctx context.Context, d messaging.Delivery)
}

func newTxBench(t *testing.T, b backend, db *sql.DB) *txBench {
	x := &txBench{t: t, b: b, db: db, table: sqlTable(t, b, db), settler: newFakeSettler()}
	x.effects = "idem_fx_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	if _, err := db.Exec("CREATE TABLE " + x.effects + " (id VARCHAR(64) PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + x.effects) })
	store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(x.table))
	if err != nil {
		t.Fatal(err)
	}
	insert := b.dialect.Rebind("INSERT INTO " + x.effects + " (id) VALUES (?)")
	work := messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
		tx := messaging.TransactionSlotFrom(ctx).Tx
		for _, d := range messaging.DeliveriesFrom(ctx) {
			if _, err := tx.ExecContext(ctx, insert, d.MessageID); err != nil {
				panic(err)
			}
			if x.then != nil {
				x.then(ctx, d)
			}
		}
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	x.handler = messaging.Chain(sqltx.Middleware(db, sqltx.Options.Logger(quiet)),
		InTransaction(store, Options.Logger(quiet), Options.InProgressDelay(time.Millisecond)))(work)
	return x
}

// run hands one delivery of id to the chain and returns its panic.
func (x *txBench) run(id string) (recovered any) {
	defer func() { recovered = recover() }()
	d := messaging.Delivery{MessageID: id, SourceQueue: "orders", Message: id}
	ctx := messaging.WithSettler(messaging.WithDeliveries(context.Background(), []messaging.Delivery{d}), x.settler)
	x.handler.Handle(ctx, id)
	return nil
}

func (x *txBench) count(query string) int {
	var n int
	if err := x.db.QueryRow(query).Scan(&n); err != nil {
		x.t.Fatal(err)
	}
	return n
}

func (x *txBench) effectsOf(id string) int {
	return x.count("SELECT COUNT(*) FROM " + x.effects + " WHERE id = '" + id + "'")
}

func (x *txBench) claims() int { return x.count("SELECT COUNT(*) FROM " + x.table) }

// TestAClaimInTheHandlersTransactionCommitsWithTheWork: on MariaDB,
// PostgreSQL and SQLite, the claim is confirmed in the commit that records the
// work, so a redelivery after it is a duplicate (accepted, no second effect);
// a crash before the commit leaves neither work nor claim, and the redelivery
// runs at once (no lease to wait out); a message the handler retried leaves
// no claim.
func TestAClaimInTheHandlersTransactionCommitsWithTheWork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		x := newTxBench(t, b, db)

		if r := x.run("m1"); r != nil {
			t.Fatalf("first delivery panicked: %v", r)
		}
		if r := x.run("m1"); r != nil { // redelivered after the commit: the crash-after-commit gap
			t.Fatalf("redelivery panicked: %v", r)
		}
		if got := x.effectsOf("m1"); got != 1 {
			t.Errorf("m1 has %d effects; want 1", got)
		}
		if decision, _ := x.settler.Decided(messaging.Delivery{MessageID: "m1"}); decision.Verdict != messaging.Accepted {
			t.Errorf("the redelivery was %s; want accepted as a duplicate", decision.Verdict)
		}

		x.then = func(_ context.Context, d messaging.Delivery) {
			if d.MessageID == "m2" {
				panic("crashed before the commit")
			}
		}
		if r := x.run("m2"); r != "crashed before the commit" {
			t.Fatalf("m2 panicked with %v", r)
		}
		if got, claims := x.effectsOf("m2"), x.claims(); got != 0 || claims != 1 {
			t.Fatalf("after the rolled-back batch: %d effects of m2 and %d claims; want 0 and 1 (m1's)", got, claims)
		}
		x.then = nil
		if r := x.run("m2"); r != nil {
			t.Fatalf("m2's redelivery panicked: %v", r)
		}
		if got := x.effectsOf("m2"); got != 1 {
			t.Errorf("m2 has %d effects after its redelivery; want 1", got)
		}

		x.then = func(ctx context.Context, d messaging.Delivery) {
			if err := messaging.Retry(ctx, d, errors.New("not yet")); err != nil {
				panic(err)
			}
		}
		x.run("m3")
		if got := x.claims(); got != 2 {
			t.Errorf("%d claims after m3 was retried; want 2 (m1, m2): a retried message must not stay claimed", got)
		}
	})
}

// TestConcurrentCopiesInTransactionsRunOnce: eight copies of one message at
// once, each in its own transaction; the database's row lock makes the others
// wait for the holder's commit, and they find the key confirmed (or in
// progress): one effect.
func TestConcurrentCopiesInTransactionsRunOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		x := newTxBench(t, b, db)
		x.then = func(context.Context, messaging.Delivery) { time.Sleep(50 * time.Millisecond) } // real time: hold the transaction open while the other copies try theirs
		var wg sync.WaitGroup
		panics := make(chan any, 8)
		for range 8 {
			wg.Go(func() {
				if r := x.run("copy"); r != nil {
					panics <- r
				}
			})
		}
		wg.Wait()
		close(panics)
		for r := range panics {
			t.Logf("a copy panicked (its batch is rolled back and redelivered): %v", r)
		}
		if got := x.effectsOf("copy"); got != 1 {
			t.Errorf("%d effects of one message delivered eight times at once; want 1", got)
		}
	})
}

func TestInTransactionWithoutATransactionIsFatal(t *testing.T) {
	store, err := NewSQLStore(nil, backends[0].dialect)
	if err != nil {
		t.Fatal(err)
	}
	handler := InTransaction(store)(messaging.HandlerFunc(func(context.Context, ...any) {}))
	recovered := func() (r any) {
		defer func() { r = recover() }()
		handler.Handle(context.Background(), "m1")
		return nil
	}()
	err, _ = recovered.(error)
	if !errors.Is(err, ErrNoTransaction) || !messaging.IsFatal(err) {
		t.Fatalf("panicked with %v; want ErrNoTransaction marked fatal", recovered)
	}
}
