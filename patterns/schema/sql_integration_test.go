package schema

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/sqldialect"
)

// backend is one database the SQL registry supports; open opens it without
// a lock, for the helper process, whose parent holds the lock.
type backend struct {
	name    string
	dialect sqldialect.Dialect
	driver  string
	dsn     func(t *testing.T) string
	lock    func(t *testing.T)
}

var backends = []backend{
	{name: "MariaDB", dialect: sqldialect.MySQL, driver: "mysql", dsn: func(*testing.T) string { return testenv.MySQLDSN }, lock: func(t *testing.T) { testenv.MySQL(t) }},
	{name: "PostgreSQL", dialect: sqldialect.PostgreSQL, driver: "pgx", dsn: func(*testing.T) string { return testenv.PostgresDSN }, lock: func(t *testing.T) { testenv.Postgres(t) }},
	{name: "SQLite", dialect: sqldialect.SQLite, driver: "sqlite", dsn: sqliteDSN, lock: func(*testing.T) {}},
}

func sqliteDSN(t *testing.T) string {
	return "file:" + filepath.Join(t.TempDir(), "schemas.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
}

func open(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("cannot use %s: %v; `make services` starts it", driver, err)
	}
	return db
}

// forEachBackend runs test on each database with a fresh table, dropped when
// it ends.
func forEachBackend(t *testing.T, test func(t *testing.T, b backend, dsn string, db *sql.DB, table string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			b.lock(t)
			dsn := b.dsn(t)
			db := open(t, b.driver, dsn)
			table := "schemas_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
			r, err := NewSQLRegistry(db, b.dialect, Options.Table(table))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CreateTable(context.Background()); err != nil {
				t.Fatalf("create the table on %s: %v", b.name, err)
			}
			t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
			test(t, b, dsn, db, table)
		})
	}
}

func TestSQLRegistry(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, _ string, db *sql.DB, table string) {
		r, _ := NewSQLRegistry(db, b.dialect, Options.Table(table))
		registryContract(t, r)
	})
}

func TestSQLRegistryInARolledBackTransactionKeepsNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, _ string, db *sql.DB, table string) {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		inTx, _ := NewSQLRegistry(tx, b.dialect, Options.Table(table))
		if _, err := inTx.Register(ctx, "s", "avro", "d"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		r, _ := NewSQLRegistry(db, b.dialect, Options.Table(table))
		if _, err := r.Latest(ctx, "s"); !errors.Is(err, ErrSchemaNotFound) {
			t.Fatalf("after the rollback: %v; want ErrSchemaNotFound", err)
		}
	})
}

// CreateTable on a table another AceMQ library created (UNIQUE (subject,
// fingerprint) only) adds the unique index on (subject, version), twice over
// without harm, and the registry then works on it.
func TestSQLRegistryCreateTableAddsWhatIsMissing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, _ string, db *sql.DB, _ string) {
		ctx := context.Background()
		table := "schemas_family_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
		id, at := "id INTEGER PRIMARY KEY AUTOINCREMENT", "TIMESTAMP"
		switch {
		case b.dialect.IsMySQL():
			id, at = "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY", "DATETIME(6)"
		case b.dialect.IsPostgreSQL():
			id = "id BIGSERIAL PRIMARY KEY"
		}
		if _, err := db.Exec("CREATE TABLE " + table + " (" + id + ", subject VARCHAR(255) NOT NULL, version INTEGER NOT NULL, format VARCHAR(64) NOT NULL," +
			" definition TEXT NOT NULL, fingerprint VARCHAR(64) NOT NULL, registered_at " + at + " NOT NULL, UNIQUE (subject, fingerprint))"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
		r, err := NewSQLRegistry(db, b.dialect, Options.Table(table))
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := r.CreateTable(ctx); err != nil {
				t.Fatalf("CreateTable: %v", err)
			}
		}
		query := "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?"
		switch {
		case b.dialect.IsPostgreSQL():
			query = "SELECT COUNT(*) FROM pg_indexes WHERE tablename = $1 AND indexname = $2"
		case b.dialect.IsSQLite():
			query = "SELECT COUNT(*) FROM pragma_index_list(?) WHERE name = ?"
		}
		var n int
		if err := db.QueryRow(query, table, table+"_subject_version").Scan(&n); err != nil || n == 0 {
			t.Fatalf("the (subject, version) index after CreateTable: %d, %v", n, err)
		}
		for i, definition := range []string{"one", "two"} {
			s, err := r.Register(ctx, "s", "avro", definition)
			if err != nil || s.Version != i+1 {
				t.Fatalf("Register %s = version %d, %v; want %d", definition, s.Version, err, i+1)
			}
		}
	})
}

func TestSQLRegistryRefusesATableNameThatIsNotAnIdentifier(t *testing.T) {
	if _, err := NewSQLRegistry(nil, sqldialect.MySQL, Options.Table("x; DROP TABLE y")); err == nil {
		t.Fatal("a table name that is not an identifier was accepted")
	}
}

// TestSQLRegistryTwoProcessesAgree has 8 goroutines in this process and 8 in
// a second process register the same 10 definitions at once, each in its own
// order, on each database: every registrant gets the same 10 versions, and
// the table holds 10 rows.
func TestSQLRegistryTwoProcessesAgree(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend, dsn string, db *sql.DB, table string) {
		out := filepath.Join(t.TempDir(), "other-process.json")
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		other := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSchemaHelperProcess$", "-test.count=1")
		other.Env = append(os.Environ(), "SCHEMA_HELPER_DRIVER="+b.driver, "SCHEMA_HELPER_DIALECT="+b.dialect.String(),
			"SCHEMA_HELPER_DSN="+dsn, "SCHEMA_HELPER_TABLE="+table, "SCHEMA_HELPER_OUT="+out)
		var output strings.Builder
		other.Stdout, other.Stderr = &output, &output
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		r, _ := NewSQLRegistry(db, b.dialect, Options.Table(table))
		mine := registerConcurrently(t, r, 8, "order.placed")
		if err := other.Wait(); err != nil {
			t.Fatalf("the other process failed: %v\n%s", err, output.String())
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("the other process wrote no results: %v\n%s", err, output.String())
		}
		var theirs []Schema
		if err := json.Unmarshal(data, &theirs); err != nil {
			t.Fatal(err)
		}
		checkAgreement(t, [][]Schema{mine, theirs})
		var rows int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + table).Scan(&rows); err != nil || rows != 10 {
			t.Fatalf("the table holds %d rows (%v); want 10", rows, err)
		}
	})
}

// TestSchemaHelperProcess is the second process of
// TestSQLRegistryTwoProcessesAgree; run alone it does nothing.
func TestSchemaHelperProcess(t *testing.T) {
	driver := os.Getenv("SCHEMA_HELPER_DRIVER")
	if driver == "" {
		return
	}
	dialects := map[string]sqldialect.Dialect{"mysql": sqldialect.MySQL, "postgresql": sqldialect.PostgreSQL, "sqlite": sqldialect.SQLite}
	db := open(t, driver, os.Getenv("SCHEMA_HELPER_DSN"))
	r, err := NewSQLRegistry(db, dialects[os.Getenv("SCHEMA_HELPER_DIALECT")], Options.Table(os.Getenv("SCHEMA_HELPER_TABLE")))
	if err != nil {
		t.Fatal(err)
	}
	results := registerConcurrently(t, r, 8, "order.placed")
	data, _ := json.Marshal(results)
	if err := os.WriteFile(os.Getenv("SCHEMA_HELPER_OUT"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}
