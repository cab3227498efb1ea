package idempotency

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// backend is one database the SQL store supports.
type backend struct {
	name    string
	dialect sqldialect.Dialect
	open    func(t *testing.T) *sql.DB
}

var backends = []backend{
	{name: "MariaDB", dialect: sqldialect.MySQL, open: func(t *testing.T) *sql.DB { return testenv.MySQL(t) }},
	{name: "PostgreSQL", dialect: sqldialect.PostgreSQL, open: func(t *testing.T) *sql.DB { return testenv.Postgres(t) }},
	{name: "SQLite", dialect: sqldialect.SQLite, open: openSQLite},
}

func openSQLite(t *testing.T) *sql.DB {
	path := filepath.Join(t.TempDir(), "idempotency.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func forEachBackend(t *testing.T, test func(t *testing.T, b backend, db *sql.DB)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b, b.open(t)) })
	}
}

// sqlTable creates a fresh table from the store's Schema and drops it when
// the test ends.
func sqlTable(t *testing.T, b backend, db *sql.DB) string {
	t.Helper()
	table := "idem_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table))
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(store.Schema()) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("create the table on %s: %v\n%s", b.name, err, statement)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	return table
}

// clock is a settable clock for leases.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newSQLStore(t *testing.T, b backend, db DB, table string, c *clock) *SQLStore {
	t.Helper()
	store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table), StoreOptions.ClaimTimeout(time.Minute), StoreOptions.Clock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func mustClaim(t *testing.T, store *SQLStore, key string, want ClaimResult) {
	t.Helper()
	got, err := store.TryClaim(context.Background(), key)
	if err != nil {
		t.Fatalf("TryClaim(%q): %v", key, err)
	}
	if got != want {
		t.Fatalf("TryClaim(%q) = %s, want %s", key, got, want)
	}
}

func TestSQLStoreClaimDuplicateInProgress(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		c := &clock{now: time.Now().UTC()}
		store := newSQLStore(t, b, db, sqlTable(t, b, db), c)
		ctx := context.Background()
		mustClaim(t, store, "k", Claimed)
		c.advance(30 * time.Second)
		mustClaim(t, store, "k", InProgress)
		if err := store.Confirm(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "k", Duplicate)
		c.advance(time.Hour) // a confirmed key has no lease
		mustClaim(t, store, "k", Duplicate)
		taken, err := store.Claim(ctx, "k")
		if taken || err != nil {
			t.Fatalf("Claim = %v, %v; want false, nil", taken, err)
		}
	})
}

func TestSQLStoreLeaseExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		c := &clock{now: time.Now().UTC()}
		store := newSQLStore(t, b, db, sqlTable(t, b, db), c)
		mustClaim(t, store, "k", Claimed)
		c.advance(59 * time.Second)
		mustClaim(t, store, "k", InProgress)
		c.advance(2 * time.Second)
		mustClaim(t, store, "k", Claimed) // the crashed holder's key is taken again
		c.advance(30 * time.Second)
		mustClaim(t, store, "k", InProgress) // under the new holder's lease
	})
}

func TestSQLStoreReleaseAndConfirm(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		c := &clock{now: time.Now().UTC()}
		store := newSQLStore(t, b, db, sqlTable(t, b, db), c)
		ctx := context.Background()
		mustClaim(t, store, "a", Claimed)
		if err := store.Release(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "a", Claimed) // a failed handler's retry runs
		if err := store.Confirm(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if err := store.Release(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "a", Duplicate) // a late release forgets no work done
	})
}

func TestSQLStorePrune(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		c := &clock{now: time.Now().UTC()}
		store := newSQLStore(t, b, db, sqlTable(t, b, db), c)
		ctx := context.Background()
		mustClaim(t, store, "old", Claimed)
		_ = store.Confirm(ctx, "old")
		c.advance(2 * time.Hour)
		mustClaim(t, store, "new", Claimed)
		pruned, err := store.Prune(ctx, time.Hour)
		if err != nil || pruned != 1 {
			t.Fatalf("Prune = %d, %v; want 1, nil", pruned, err)
		}
		mustClaim(t, store, "old", Claimed)
		mustClaim(t, store, "new", InProgress)
	})
}

// Many workers claiming one key at once: exactly one holds it.
func TestSQLStoreOneClaimAmongConcurrentClaimers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table))
		if err != nil {
			t.Fatal(err)
		}
		for round := range 20 {
			key := "k" + string(rune('a'+round))
			var wg sync.WaitGroup
			var mu sync.Mutex
			results := map[ClaimResult]int{}
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := store.TryClaim(context.Background(), key)
					if err != nil {
						t.Errorf("TryClaim: %v", err)
						return
					}
					mu.Lock()
					results[r]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			if results[Claimed] != 1 || results[InProgress] != 7 {
				t.Fatalf("round %d: %v; want one claimed, seven in progress", round, results)
			}
		}
	})
}

// A store over the work's transaction: a rollback forgets the claim with the
// work.
func TestSQLStoreInATransaction(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		c := &clock{now: time.Now().UTC()}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		inTx := newSQLStore(t, b, tx, table, c)
		mustClaim(t, inTx, "k", Claimed)
		if err := inTx.Confirm(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, newSQLStore(t, b, db, table, c), "k", Claimed)
	})
}

func TestSQLStoreSchema(t *testing.T) {
	store, _ := NewSQLStore(nil, sqldialect.MySQL)
	if ddl := store.Schema(); !strings.Contains(ddl, "`key` VARCHAR(255) PRIMARY KEY") || !strings.Contains(ddl, "DATETIME(6)") || !strings.Contains(ddl, "INDEX acemq_idempotency_handled_at (handled_at)") {
		t.Fatalf("MySQL schema:\n%s", ddl)
	}
	store, _ = NewSQLStore(nil, sqldialect.PostgreSQL)
	if ddl := store.Schema(); !strings.Contains(ddl, "CREATE INDEX IF NOT EXISTS acemq_idempotency_handled_at ON acemq_idempotency (handled_at)") || strings.Contains(ddl, "`") {
		t.Fatalf("PostgreSQL schema:\n%s", ddl)
	}
	if _, err := NewSQLStore(nil, sqldialect.SQLite, StoreOptions.Table("x; DROP TABLE y")); err == nil {
		t.Fatal("a table name that is not an identifier was accepted")
	}
}
