package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/sqltx"
)

// forEachCountedBackend runs test on each database, opened through the
// counting driver, over a fresh table whose statements it counts.
func forEachCountedBackend(t *testing.T, test func(t *testing.T, b backend, db *sql.DB, table string, counted *statements)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db, counted := openCounting(t, b)
			table := sqlTable(t, b, db)
			counted.table = table
			test(t, b, db, table, counted)
		})
	}
}

func keysOf(prefix string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(prefix, i)
	}
	return keys
}

func mustClaimAll(t *testing.T, store *SQLStore, keys []string) []Claim {
	t.Helper()
	claims, err := store.TryClaimAll(context.Background(), keys)
	if err != nil {
		t.Fatalf("TryClaimAll(%v): %v", keys, err)
	}
	if len(claims) != len(keys) {
		t.Fatalf("TryClaimAll of %d keys answered %d claims", len(keys), len(claims))
	}
	for i, c := range claims {
		if c.Key != keys[i] || (c.Owner != "") != (c.Result == Claimed) {
			t.Fatalf("TryClaimAll(%v)[%d] = %+v", keys, i, c)
		}
	}
	return claims
}

func results(claims []Claim) []ClaimResult {
	found := make([]ClaimResult, len(claims))
	for i, c := range claims {
		found[i] = c.Result
	}
	return found
}

// handleBatch hands handler one batch of the messages ids, their envelopes
// in the context, and returns how they were settled.
func handleBatch(handler messaging.Handler, ids ...string) *fakeSettler {
	settler := newFakeSettler()
	handleBatchWith(handler, settler, ids...)
	return settler
}

func mustCount(t *testing.T, counted *statements, want int, what string) {
	t.Helper()
	if n, sent := counted.count(); n != want {
		t.Fatalf("%s sent %d statements; want %d:\n%s", what, n, want, strings.Join(sent, "\n"))
	}
}

// A batch of eight free keys is claimed with one statement and confirmed
// with one more; a batch that meets confirmed keys, a live claim, a repeated
// key and a lease that ended reads their rows with one SELECT and retakes
// only the expired one.
func TestSQLStoreClaimsAndConfirmsABatchInOneStatementEach(t *testing.T) {
	forEachCountedBackend(t, func(t *testing.T, b backend, db *sql.DB, table string, counted *statements) {
		store := newSQLStore(t, b, db, table)
		ctx := context.Background()
		claims := mustClaimAll(t, store, keysOf("k", 8))
		mustCount(t, counted, 1, "claiming 8 free keys")
		for _, c := range claims {
			if c.Result != Claimed || c.Lease != time.Minute || c.Owner != claims[0].Owner {
				t.Fatalf("claim %+v; want claimed with the batch's owner and the claim timeout", c)
			}
		}
		if errs := store.ConfirmAll(ctx, claims); errs != nil {
			t.Fatalf("ConfirmAll: %v", errs)
		}
		mustCount(t, counted, 1, "confirming 8 claims")

		held := mustClaim(t, store, "held", Claimed)
		mustClaim(t, store, "stale", Claimed)
		age(t, b, db, table, "stale", 2*time.Minute)
		counted.count()
		mixed := mustClaimAll(t, store, []string{"k0", "held", "new", "stale", "new", "k7"})
		want := []ClaimResult{Duplicate, InProgress, Claimed, Claimed, InProgress, Duplicate}
		if got := results(mixed); !slices.Equal(got, want) {
			t.Fatalf("TryClaimAll of a mixed batch = %v; want %v", got, want)
		}
		mustCount(t, counted, 3, "claiming a mixed batch (insert, select, retake of the expired key)")
		if mixed[2].Owner != mixed[3].Owner {
			t.Errorf("the retaken key has owner %q, the new one %q: want the batch's", mixed[3].Owner, mixed[2].Owner)
		}

		// The fence holds batch by batch: the first holder of "held" is
		// taken over; its batch confirm confirms what is still its own and
		// reports the other lost.
		age(t, b, db, table, "held", 2*time.Minute)
		late := mustClaimAll(t, store, []string{"held"})
		errs := store.ConfirmAll(ctx, []Claim{held, mixed[2]})
		if len(errs) != 2 || !errors.Is(errs[0], ErrClaimLost) || errs[1] != nil {
			t.Fatalf("ConfirmAll of a lost and a held claim = %v; want [ErrClaimLost, nil]", errs)
		}
		mustClaim(t, store, "new", Duplicate)
		mustClaim(t, store, "held", InProgress) // still the later holder's
		if errs := store.ConfirmAll(ctx, late); errs != nil {
			t.Fatalf("the later holder's ConfirmAll: %v", errs)
		}
		mustClaim(t, store, "held", Duplicate)
	})
}

// Middleware over the SQL store costs a batch two statements, whatever its
// size: the claim and the confirmation.
func TestMiddlewareClaimsAndConfirmsABatchWithTwoStatements(t *testing.T) {
	forEachCountedBackend(t, func(t *testing.T, b backend, db *sql.DB, table string, counted *statements) {
		store := newSQLStore(t, b, db, table)
		var ran []string
		guard := Middleware(store, Options.Logger(slog.New(slog.NewTextHandler(io.Discard, nil))))(messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			for _, m := range messages {
				ran = append(ran, m.(string))
			}
		}))
		batch := func(ids ...string) *fakeSettler { return handleBatch(guard, ids...) }
		batch(keysOf("m", 8)...)
		mustCount(t, counted, 2, "a batch of 8 through the guard")
		settler := batch("m0", "m8")
		mustCount(t, counted, 3, "a batch with a duplicate (insert, select, confirm)")
		if want := append(keysOf("m", 8), "m8"); !slices.Equal(ran, want) {
			t.Fatalf("the handler ran %v; want %v", ran, want)
		}
		if decision, _ := settler.Decided(messaging.Delivery{MessageID: "m0"}); decision.Verdict != messaging.Accepted {
			t.Fatalf("the duplicate was %s; want accepted", decision.Verdict)
		}
	})
}

// InTransaction claims and confirms a batch with one statement in the
// batch's own transaction: a batch of eight commits eight effects and eight
// confirmed keys; its redelivery is eight duplicates (the insert and one
// SELECT); a message the handler retried has its row deleted with the work
// of the others committed.
func TestInTransactionClaimsAndConfirmsABatchWithOneStatement(t *testing.T) {
	forEachCountedBackend(t, func(t *testing.T, b backend, db *sql.DB, table string, counted *statements) {
		effects := "idem_fx_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
		if _, err := db.Exec("CREATE TABLE " + effects + " (id VARCHAR(64) PRIMARY KEY)"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + effects) })
		store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table))
		if err != nil {
			t.Fatal(err)
		}
		insert := b.dialect.Rebind("INSERT INTO " + effects + " (id) VALUES (?)")
		retry := ""
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		handler := messaging.Chain(sqltx.Middleware(db, sqltx.Options.Logger(quiet)), InTransaction(store, Options.Logger(quiet)))(
			messaging.HandlerFunc(func(ctx context.Context, _ ...any) {
				tx := messaging.TransactionSlotFrom(ctx).Tx
				for _, d := range messaging.DeliveriesFrom(ctx) {
					if d.MessageID == retry {
						if err := messaging.Retry(ctx, d, errors.New("not yet")); err != nil {
							panic(err)
						}
						continue
					}
					if _, err := tx.ExecContext(ctx, insert, d.MessageID); err != nil {
						panic(err)
					}
				}
			}))
		run := func(ids ...string) *fakeSettler { return handleBatch(handler, ids...) }
		count := func(query string) int {
			var n int
			if err := db.QueryRow(query).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		run(keysOf("m", 8)...)
		mustCount(t, counted, 1, "a batch of 8 in its transaction")
		if fx, confirmed := count("SELECT COUNT(*) FROM "+effects), count("SELECT COUNT(*) FROM "+table+" WHERE confirmed = TRUE"); fx != 8 || confirmed != 8 {
			t.Fatalf("after the batch: %d effects and %d confirmed keys; want 8 and 8", fx, confirmed)
		}
		counted.count()
		settler := run(keysOf("m", 8)...)
		mustCount(t, counted, 2, "the batch redelivered (insert, select)")
		if fx := count("SELECT COUNT(*) FROM " + effects); fx != 8 {
			t.Fatalf("after the redelivery: %d effects; want 8", fx)
		}
		for _, id := range keysOf("m", 8) {
			if decision, _ := settler.Decided(messaging.Delivery{MessageID: id}); decision.Verdict != messaging.Accepted {
				t.Fatalf("the redelivered %s was %s; want accepted as a duplicate", id, decision.Verdict)
			}
		}
		counted.count()
		retry = "n1"
		run("n0", "n1", "n2")
		mustCount(t, counted, 2, "a batch with a retried message (claim, release)")
		if claims, retried := count("SELECT COUNT(*) FROM "+table), count("SELECT COUNT(*) FROM "+table+" WHERE claimed_by <> '' AND "+store.keyColumn()+" = 'n1'"); claims != 10 || retried != 0 {
			t.Fatalf("after the retried message: %d keys, n1's %d; want 10 and 0", claims, retried)
		}
	})
}

// On MySQL the store keeps its statements prepared on its own handle. A
// transaction that holds the only connection of its pool must not wait for
// a second one to prepare in: the batch runs unprepared and commits; after
// Close the store still claims, preparing each statement again.
func TestInTransactionOnAPoolOfOneConnection(t *testing.T) {
	b := backends[0]
	db := b.open(t)
	db.SetMaxOpenConns(1)
	table := sqlTable(t, b, db)
	store := newSQLStore(t, b, db, table)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var ran int
	handler := messaging.Chain(sqltx.Middleware(db, sqltx.Options.Logger(quiet)), InTransaction(store, Options.Logger(quiet)))(
		messaging.HandlerFunc(func(_ context.Context, messages ...any) { ran += len(messages) }))
	done := make(chan struct{})
	go func() {
		defer close(done)
		handleBatch(handler, keysOf("p", 4)...)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // under the 10 s store timeout a prepare that waited would take
		t.Fatal("a batch in a transaction on a pool of one connection did not end within 5 s: the store waited for a second connection")
	}
	if ran != 4 {
		t.Fatalf("the handler ran %d messages; want 4", ran)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, store, "p0", Duplicate)
	mustClaim(t, store, "after-close", Claimed)
}

// A batch larger than one statement's share of keys is claimed and
// confirmed in chunks of 1,000: 2,500 keys take three statements each way,
// and every key is answered.
func TestSQLStoreClaimsALargeBatchInChunks(t *testing.T) {
	forEachCountedBackend(t, func(t *testing.T, b backend, db *sql.DB, table string, counted *statements) {
		store := newSQLStore(t, b, db, table)
		keys := keysOf("big", 2500)
		claims := mustClaimAll(t, store, keys)
		mustCount(t, counted, 3, "claiming 2,500 keys")
		if errs := store.ConfirmAll(context.Background(), claims); errs != nil {
			t.Fatalf("ConfirmAll: %v", errors.Join(errs...))
		}
		mustCount(t, counted, 3, "confirming 2,500 keys")
		for i, c := range mustClaimAll(t, store, keys) {
			if c.Result != Duplicate {
				t.Fatalf("key %d of the confirmed batch is %s; want duplicate", i, c.Result)
			}
		}
		mustCount(t, counted, 6, "claiming 2,500 confirmed keys (an insert and a select per chunk)")
	})
}

// Eight batches of the same twenty keys, each in its own order, claimed at
// once: every key is claimed by exactly one of them, and none fails (the
// keys are inserted in one order, so the batches wait for each other rather
// than deadlock).
func TestSQLStoreConcurrentBatchesClaimEachKeyOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		store := newSQLStore(t, b, db, sqlTable(t, b, db))
		keys := keysOf("c", 20)
		claimed := make([]int, len(keys))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for worker := range 8 {
			order := slices.Clone(keys)
			rand.New(rand.NewPCG(uint64(worker), 1)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			wg.Go(func() {
				claims, err := store.TryClaimAll(context.Background(), order)
				if err != nil {
					t.Errorf("TryClaimAll: %v", err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, c := range claims {
					if c.Result == Claimed {
						claimed[slices.Index(keys, c.Key)]++
					}
				}
			})
		}
		wg.Wait()
		for i, n := range claimed {
			if n != 1 {
				t.Errorf("key %s was claimed by %d batches; want 1", keys[i], n)
			}
		}
	})
}
