package sqldialect

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The module's tables (the outbox, the idempotency store, the schema
// registry, the stream checkpoints) are created the same way: DDL written
// CREATE TABLE IF NOT EXISTS, split into statements for drivers that run one
// per Exec, and indexes created when they are missing. Their DDL can be
// applied with migrations or created at start with CreateTable; running either
// twice changes nothing.

// Statements splits ddl into single statements, without comments, for
// drivers that run one statement per Exec. Apply them in order.
func Statements(ddl string) []string {
	var kept []string
	for _, line := range strings.Split(ddl, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			kept = append(kept, line)
		}
	}
	var statements []string
	for _, statement := range strings.Split(strings.Join(kept, "\n"), ";") {
		if statement = strings.TrimSpace(statement); statement != "" {
			statements = append(statements, statement)
		}
	}
	return statements
}

// Script joins statements into one script for a migration tool, each
// statement ending in a semicolon: the inverse of Statements.
func Script(statements ...string) string {
	return strings.Join(statements, ";\n") + ";\n"
}

// DB is what the module's tables need of a database: *sql.DB, *sql.Conn and
// *sql.Tx all have it, so a table used through a *sql.Tx is written in that
// transaction.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Index is a secondary index of one of the module's tables.
type Index struct {
	// Name is the index's name, unique in its schema.
	Name string
	// Table is the table, as its DDL names it (optionally schema.table).
	Table string
	// Columns are the indexed columns, in order.
	Columns []string
	// Unique makes it a unique index.
	Unique bool
}

// CreateIndex is the statement that creates index when it is missing, for
// migrations: CREATE [UNIQUE] INDEX IF NOT EXISTS on PostgreSQL, SQLite and
// MariaDB. MySQL 8 has no such form: there, declare the index inside CREATE
// TABLE IF NOT EXISTS, or let CreateTable or EnsureIndex create what is
// missing.
func (d Dialect) CreateIndex(index Index) string {
	kind := "INDEX"
	if index.Unique {
		kind = "UNIQUE INDEX"
	}
	return fmt.Sprintf("CREATE %s IF NOT EXISTS %s ON %s (%s)", kind, index.Name, index.Table, strings.Join(index.Columns, ", "))
}

// CreateTable makes a table of the module ready in db, whatever part of it
// exists: it runs each statement of ddl (which must create only what is
// missing: CREATE TABLE IF NOT EXISTS, CREATE INDEX IF NOT EXISTS), then
// creates each of indexes the table lacks. On MySQL and MariaDB it asks the
// catalog (information_schema.statistics) for them first, since MySQL 8 has
// no CREATE INDEX IF NOT EXISTS. The error names the statement that failed.
func (d Dialect) CreateTable(ctx context.Context, db *sql.DB, ddl string, indexes ...Index) error {
	for _, statement := range Statements(ddl) {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			return fmt.Errorf("sqldialect: %w; the statement was:\n%s", err, statement)
		}
	}
	for _, index := range indexes {
		if err := d.EnsureIndex(ctx, db, index); err != nil {
			return err
		}
	}
	return nil
}

// EnsureIndex creates index unless its table has it: with CreateIndex's
// statement, or on MySQL and MariaDB after asking the catalog
// (information_schema.statistics), since MySQL 8 has no CREATE INDEX IF NOT
// EXISTS. The error names the index.
func (d Dialect) EnsureIndex(ctx context.Context, db DB, index Index) error {
	statement := d.CreateIndex(index)
	if d.IsMySQL() {
		present, err := mysqlHasIndex(ctx, db, index)
		if err != nil || present {
			return err
		}
		statement = strings.Replace(statement, " IF NOT EXISTS", "", 1)
	}
	if _, err := db.ExecContext(ctx, statement); err != nil {
		return fmt.Errorf("sqldialect: create index %s on %s: %w", index.Name, index.Table, err)
	}
	return nil
}

// mysqlHasIndex asks MySQL's catalog whether index's table has an index of
// its name.
func mysqlHasIndex(ctx context.Context, db DB, index Index) (bool, error) {
	schema, table := "", index.Table
	if dot := strings.LastIndexByte(index.Table, '.'); dot >= 0 {
		schema, table = index.Table[:dot], index.Table[dot+1:]
	}
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.statistics "+
		"WHERE table_schema = COALESCE(NULLIF(?, ''), DATABASE()) AND table_name = ? AND index_name = ?",
		schema, table, index.Name).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("sqldialect: look for index %s on %s: %w", index.Name, index.Table, err)
	}
	return n > 0, nil
}
