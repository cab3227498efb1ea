package idempotency

import (
	"context"
	"database/sql"
	"errors"
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

// sqlTable creates a fresh table with the store's CreateTable and drops it
// when the test ends.
func sqlTable(t *testing.T, b backend, db *sql.DB) string {
	t.Helper()
	table := "idem_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTable(context.Background()); err != nil {
		t.Fatalf("create the table on %s: %v", b.name, err)
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	return table
}

func newSQLStore(t *testing.T, b backend, db DB, table string) *SQLStore {
	t.Helper()
	store, err := NewSQLStore(db, b.dialect, StoreOptions.Table(table), StoreOptions.ClaimTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// age moves key's row back in time by d, as if it had been claimed (or
// confirmed) that long ago: a lease ends without waiting for it.
func age(t *testing.T, b backend, db *sql.DB, table, key string, d time.Duration) {
	t.Helper()
	column := "key"
	if b.dialect.IsMySQL() {
		column = "`key`"
	}
	query := b.dialect.Rebind("UPDATE " + table + " SET handled_at = ? WHERE " + column + " = ?")
	if _, err := db.Exec(query, b.dialect.Time(time.Now().Add(-d)), key); err != nil {
		t.Fatalf("age %q: %v", key, err)
	}
}

func mustClaim(t *testing.T, store *SQLStore, key string, want ClaimResult) Claim {
	t.Helper()
	got, err := store.TryClaim(context.Background(), key)
	if err != nil {
		t.Fatalf("TryClaim(%q): %v", key, err)
	}
	if got.Result != want || got.Key != key {
		t.Fatalf("TryClaim(%q) = %s of %q, want %s", key, got.Result, got.Key, want)
	}
	if (got.Owner != "") != (want == Claimed) {
		t.Fatalf("TryClaim(%q) = %s with owner %q", key, got.Result, got.Owner)
	}
	return got
}

func mustBeLost(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, ErrClaimLost) {
		t.Fatalf("%s: %v; want ErrClaimLost", what, err)
	}
}

func TestSQLStoreClaimDuplicateInProgress(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		store := newSQLStore(t, b, db, table)
		ctx := context.Background()
		c := mustClaim(t, store, "k", Claimed)
		if c.Lease != time.Minute {
			t.Errorf("the claim's lease is %s; want the claim timeout", c.Lease)
		}
		mustClaim(t, store, "k", InProgress)
		if err := store.Confirm(ctx, c); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "k", Duplicate)
		age(t, b, db, table, "k", time.Hour) // a confirmed key has no lease
		mustClaim(t, store, "k", Duplicate)
	})
}

func TestSQLStoreLeaseExpiry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		store := newSQLStore(t, b, db, table)
		mustClaim(t, store, "k", Claimed)
		age(t, b, db, table, "k", 59*time.Second)
		mustClaim(t, store, "k", InProgress)
		age(t, b, db, table, "k", 61*time.Second)
		mustClaim(t, store, "k", Claimed)    // the crashed holder's key is taken again
		mustClaim(t, store, "k", InProgress) // under the new holder's lease
	})
}

// The first holder's lease ran out and a second delivery took the key: the
// first can neither release nor confirm the second's claim, nor renew its
// own; the second's work is confirmed.
func TestSQLStoreALateHolderCannotTouchTheClaimThatReplacedIt(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		store := newSQLStore(t, b, db, table)
		ctx := context.Background()
		first := mustClaim(t, store, "k", Claimed)
		age(t, b, db, table, "k", 2*time.Minute)
		second := mustClaim(t, store, "k", Claimed)
		if second.Owner == first.Owner {
			t.Fatalf("the retaken claim kept the owner %q", first.Owner)
		}
		if err := store.Release(ctx, first); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "k", InProgress) // still the second's
		mustBeLost(t, store.Renew(ctx, first), "the first holder's Renew")
		mustBeLost(t, store.Confirm(ctx, first), "the first holder's Confirm")
		mustClaim(t, store, "k", InProgress)
		if err := store.Confirm(ctx, second); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "k", Duplicate)
	})
}

// A renewal restarts the lease; two renewals in a row (the second changing
// nothing on MySQL, which counts changed rows) are both the caller's.
func TestSQLStoreARenewedClaimKeepsItsKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		store := newSQLStore(t, b, db, table)
		ctx := context.Background()
		c := mustClaim(t, store, "k", Claimed)
		age(t, b, db, table, "k", 2*time.Minute)
		for range 2 {
			if err := store.Renew(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		mustClaim(t, store, "k", InProgress)
		if err := store.Confirm(ctx, c); err != nil {
			t.Fatal(err)
		}
		mustBeLost(t, store.Renew(ctx, c), "Renew after Confirm")
		mustBeLost(t, store.Confirm(ctx, Claim{Key: "absent", Owner: "x"}), "Confirm of a key never claimed")
	})
}

func TestSQLStoreReleaseAndConfirm(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		store := newSQLStore(t, b, db, sqlTable(t, b, db))
		ctx := context.Background()
		if err := store.Release(ctx, mustClaim(t, store, "a", Claimed)); err != nil {
			t.Fatal(err)
		}
		c := mustClaim(t, store, "a", Claimed) // a failed handler's retry runs
		if err := store.Confirm(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := store.Release(ctx, c); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, store, "a", Duplicate) // a late release forgets no work done
	})
}

func TestSQLStorePrune(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		table := sqlTable(t, b, db)
		store := newSQLStore(t, b, db, table)
		ctx := context.Background()
		if err := store.Confirm(ctx, mustClaim(t, store, "old", Claimed)); err != nil {
			t.Fatal(err)
		}
		age(t, b, db, table, "old", 2*time.Hour)
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
					results[r.Result]++
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
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		inTx := newSQLStore(t, b, tx, table)
		if err := inTx.Confirm(context.Background(), mustClaim(t, inTx, "k", Claimed)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, newSQLStore(t, b, db, table), "k", Claimed)
	})
}

func TestSQLStoreSchema(t *testing.T) {
	store, _ := NewSQLStore(nil, sqldialect.MySQL)
	if ddl := store.Schema(); !strings.Contains(ddl, "`key` VARCHAR(255) PRIMARY KEY") || !strings.Contains(ddl, "DATETIME(6)") ||
		!strings.Contains(ddl, "INDEX acemq_idempotency_handled_at (handled_at)") || !strings.Contains(ddl, "claimed_by VARCHAR(36) NOT NULL DEFAULT ''") ||
		!strings.HasPrefix(ddl, "CREATE TABLE IF NOT EXISTS acemq_idempotency (") || !strings.HasSuffix(ddl, ");\n") {
		t.Fatalf("MySQL schema:\n%s", ddl)
	}
	store, _ = NewSQLStore(nil, sqldialect.PostgreSQL)
	if ddl := store.Schema(); !strings.Contains(ddl, ");\nCREATE INDEX IF NOT EXISTS acemq_idempotency_handled_at ON acemq_idempotency (handled_at);\n") || strings.Contains(ddl, "`") {
		t.Fatalf("PostgreSQL schema:\n%s", ddl)
	}
	if _, err := NewSQLStore(nil, sqldialect.SQLite, StoreOptions.Table("x; DROP TABLE y")); err == nil {
		t.Fatal("a table name that is not an identifier was accepted")
	}
}

// CreateTable makes what is missing and nothing else: a fresh table (twice
// over), a table in the other AceMQ libraries' layout without the index (the
// owner column and the index added), and one from before their confirmed
// column; on each the store then claims, confirms and finds duplicates.
func TestSQLStoreCreateTableCreatesWhatIsMissing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		ctx := context.Background()
		key := map[bool]string{true: "`key`", false: "key"}[b.dialect.IsMySQL()]
		at := map[bool]string{true: "DATETIME(6)", false: "TIMESTAMP"}[b.dialect.IsMySQL()]
		layouts := map[string]string{
			"fresh":      "",
			"family":     "(" + key + " VARCHAR(255) PRIMARY KEY, handled_at " + at + " NOT NULL, confirmed BOOLEAN NOT NULL DEFAULT FALSE)",
			"before 0.8": "(" + key + " VARCHAR(255) PRIMARY KEY, handled_at " + at + " NOT NULL)",
		}
		for name, layout := range layouts {
			table := "idem_ct_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
			t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
			if layout != "" {
				if _, err := db.Exec("CREATE TABLE " + table + " " + layout); err != nil {
					t.Fatal(err)
				}
			}
			store := newSQLStore(t, b, db, table)
			for range 2 {
				if err := store.CreateTable(ctx); err != nil {
					t.Fatalf("%s: CreateTable: %v", name, err)
				}
			}
			if !hasIndex(t, b, db, table, table+"_handled_at") {
				t.Errorf("%s: no handled_at index after CreateTable", name)
			}
			if err := store.Confirm(ctx, mustClaim(t, store, "k", Claimed)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			mustClaim(t, store, "k", Duplicate)
		}
	})
}

// hasIndex asks the database's catalogue whether table has index.
func hasIndex(t *testing.T, b backend, db *sql.DB, table, index string) bool {
	t.Helper()
	query := "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?"
	switch {
	case b.dialect.IsPostgreSQL():
		query = "SELECT COUNT(*) FROM pg_indexes WHERE tablename = $1 AND indexname = $2"
	case b.dialect.IsSQLite():
		query = "SELECT COUNT(*) FROM pragma_index_list(?) WHERE name = ?"
	}
	var n int
	if err := db.QueryRow(query, table, index).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// A key of 255 characters (multi-byte ones included) is claimed; one more is
// refused before the database sees it, as a fatal error naming the limit.
func TestSQLStoreRefusesAKeyOverItsLimit(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, db *sql.DB) {
		store := newSQLStore(t, b, db, sqlTable(t, b, db))
		mustClaim(t, store, strings.Repeat("é", MaxKeyLength), Claimed)
		_, err := store.TryClaim(context.Background(), strings.Repeat("é", MaxKeyLength+1))
		if !messaging.IsFatal(err) || !strings.Contains(err.Error(), "at most 255") {
			t.Fatalf("TryClaim of a 256-character key: %v; want a fatal error naming the limit", err)
		}
	})
}

// A MySQL handle opened with clientFoundRows=true would read every duplicate
// as claimed: NewSQLStore refuses it, and a *sql.Conn or *sql.Tx of it, and
// takes the same DSN without the parameter. Opening makes no connection, so
// only the Conn and Tx cases reach MariaDB.
func TestSQLStoreRefusesAHandleThatReportsFoundRows(t *testing.T) {
	found, err := sql.Open("mysql", testenv.MySQLDSN+"&clientFoundRows=true")
	if err != nil {
		t.Fatal(err)
	}
	defer found.Close()
	if _, err := NewSQLStore(found, sqldialect.MySQL); !errors.Is(err, ErrClientFoundRows) {
		t.Fatalf("NewSQLStore over a clientFoundRows handle: %v; want ErrClientFoundRows", err)
	}
	if _, err := NewSQLStore(found, sqldialect.PostgreSQL); err != nil {
		t.Fatalf("the check is MySQL's only: %v", err)
	}
	plain, err := sql.Open("mysql", testenv.MySQLDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := NewSQLStore(plain, sqldialect.MySQL); err != nil {
		t.Fatalf("NewSQLStore over a plain handle: %v", err)
	}
	testenv.MySQL(t) // the lock, and a check that MariaDB answers
	ctx := context.Background()
	conn, err := found.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := found.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for name, db := range map[string]DB{"*sql.Conn": conn, "*sql.Tx": tx} {
		if _, err := NewSQLStore(db, sqldialect.MySQL); !errors.Is(err, ErrClientFoundRows) {
			t.Errorf("NewSQLStore over a %s of a clientFoundRows handle: %v; want ErrClientFoundRows", name, err)
		}
	}
}
