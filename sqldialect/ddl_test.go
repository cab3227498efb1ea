package sqldialect

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"
)

func TestStatementsDropCommentsAndSplitOnSemicolons(t *testing.T) {
	got := Statements("-- a comment\nCREATE TABLE IF NOT EXISTS t (a int);\n\n  -- another\nCREATE INDEX IF NOT EXISTS i ON t (a);\n")
	if len(got) != 2 || got[0] != "CREATE TABLE IF NOT EXISTS t (a int)" || got[1] != "CREATE INDEX IF NOT EXISTS i ON t (a)" {
		t.Fatalf("Statements: %q", got)
	}
}

func TestCreateIndexCreatesOnlyWhatIsMissing(t *testing.T) {
	index := Index{Name: "ix_t_a", Table: "t", Columns: []string{"a", "b"}}
	if got := PostgreSQL.CreateIndex(index); got != "CREATE INDEX IF NOT EXISTS ix_t_a ON t (a, b)" {
		t.Errorf("CreateIndex: %q", got)
	}
	index.Unique = true
	if got := SQLite.CreateIndex(index); got != "CREATE UNIQUE INDEX IF NOT EXISTS ix_t_a ON t (a, b)" {
		t.Errorf("CreateIndex of a unique index: %q", got)
	}
}

// CreateTable run twice, and over a table that lost an index, leaves the
// table and its indexes in place.
func TestCreateTableMakesTheTableReadyWhateverExists(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "ddl.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	ctx := context.Background()
	index := Index{Name: "ix_t_a", Table: "t", Columns: []string{"a"}}
	for range 2 {
		if err := SQLite.CreateTable(ctx, db, "CREATE TABLE IF NOT EXISTS t (a int);", index); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec("DROP INDEX ix_t_a"); err != nil {
		t.Fatal(err)
	}
	if err := SQLite.CreateTable(ctx, db, "CREATE TABLE IF NOT EXISTS t (a int);", index); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'ix_t_a'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("index present %d time(s) (%v); want it put back", n, err)
	}
	if err := SQLite.CreateTable(ctx, db, "CREATE TABLE t (a int);"); err == nil {
		t.Fatal("a bare CREATE TABLE over an existing table did not fail")
	}
}
