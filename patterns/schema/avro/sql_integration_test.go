package avro

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/testenv"
	"github.com/warrenmq/messaging/patterns/schema"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// database is one database the SQL registry runs on, opened under its lock.
type database struct {
	name    string
	dialect sqldialect.Dialect
	open    func(t *testing.T) *sql.DB
}

var databases = []database{
	{"MariaDB", sqldialect.MySQL, func(t *testing.T) *sql.DB { return testenv.MySQL(t) }},
	{"PostgreSQL", sqldialect.PostgreSQL, func(t *testing.T) *sql.DB { return testenv.Postgres(t) }},
	{"SQLite", sqldialect.SQLite, openSQLite},
}

func openSQLite(t *testing.T) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "schemas.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// sqlRegistry is a SQL registry in a table of its own on db, dropped when the
// test ends.
func sqlRegistry(t *testing.T, db *sql.DB, dialect sqldialect.Dialect) *schema.SQLRegistry {
	t.Helper()
	table := "avro_schemas_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
	registry, err := schema.NewSQLRegistry(db, dialect, schema.Options.Table(table))
	if err != nil {
		t.Fatal(err)
	}
	for _, statement := range sqlmq.Statements(registry.Schema()) {
		if _, err := db.Exec(statement); err != nil {
			t.Fatalf("create %s: %v", table, err)
		}
	}
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
	return registry
}

// On each database: a publisher of each version registers its schema, every
// consumer fetches it by id, and the evolutions read as on the memory
// registry; an id the registry does not hold is fatal.
func TestTheSchemaEvolvesBothWaysOnTheSQLRegistry(t *testing.T) {
	for _, d := range databases {
		t.Run(d.name, func(t *testing.T) {
			registry := sqlRegistry(t, d.open(t), d.dialect)
			checkEvolutions(t, registry)

			reader, _ := NewRegistered(registry)
			err := reader.Deserialize([]byte{0x00, 0x7f, 0xff, 0xff, 0xff, 0x00, 0x00}, new(orderV1))
			if !messaging.IsFatal(err) || !errors.Is(err, schema.ErrSchemaNotFound) {
				t.Fatalf("an id the registry does not hold: %v", err)
			}
		})
	}
}

// A registry on a database nobody answers for is an outage: the read is
// retryable, never fatal, and so is the write.
func TestAnUnreachableSQLRegistryIsRetryable(t *testing.T) {
	for _, d := range []struct {
		name, driver, dsn string
		dialect           sqldialect.Dialect
	}{
		{"MariaDB", "mysql", "root@tcp(127.0.0.1:1)/test?timeout=2s", sqldialect.MySQL},
		{"PostgreSQL", "pgx", "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2", sqldialect.PostgreSQL},
	} {
		t.Run(d.name, func(t *testing.T) {
			db, err := sql.Open(d.driver, d.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			registry, _ := schema.NewSQLRegistry(db, d.dialect)
			reader, _ := NewRegistered(registry)
			err = reader.Deserialize([]byte{0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00}, new(orderV1))
			if !messaging.IsRetryable(err) || messaging.IsFatal(err) || !messaging.IsOutage(err) {
				t.Fatalf("reading with an unreachable registry: %v", err)
			}
			writer, _ := NewRegistered(registry, Options.Write(typeV1, "order", schemaV1))
			if _, err := writer.Serialize(orderV1{}); !messaging.IsRetryable(err) || !messaging.IsOutage(err) {
				t.Fatalf("writing with an unreachable registry: %v", err)
			}
			if err := writer.Register(context.Background()); !messaging.IsRetryable(err) {
				t.Fatalf("registering with an unreachable registry: %v", err)
			}
		})
	}
}
