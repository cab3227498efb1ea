package sqlmq

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/warrenmq/messaging"
)

// A service that creates its outbox table at start can start twice: on each
// database, the DDL applied twice and CreateSchema called twice change
// nothing, and CreateSchema puts back an index the table lost.
func TestIntegrationTheOutboxTableCanBeCreatedAtEveryStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		db := b.open(t)
		ctx := context.Background()
		table := "outbox_" + strings.ReplaceAll(messaging.NewID()[:8], "-", "")
		t.Cleanup(func() { _, _ = db.Exec("DROP TABLE " + table) })
		ddl, err := TableSchema(b.dialect, table)
		if err != nil {
			t.Fatal(err)
		}
		for start := 1; start <= 2; start++ {
			for _, statement := range Statements(ddl) {
				if _, err := db.ExecContext(ctx, statement); err != nil {
					t.Fatalf("start %d: apply the DDL: %v", start, err)
				}
			}
			if err := CreateSchema(ctx, db, b.dialect, table); err != nil {
				t.Fatalf("start %d: CreateSchema: %v", start, err)
			}
		}
		lost := outboxIndexes(table)[1]
		drop := "DROP INDEX " + lost.Name
		if b.dialect.IsMySQL() {
			drop += " ON " + table
		}
		if _, err := db.ExecContext(ctx, drop); err != nil {
			t.Fatal(err)
		}
		if err := CreateSchema(ctx, db, b.dialect, table); err != nil {
			t.Fatalf("CreateSchema over a table that lost an index: %v", err)
		}
		if !hasIndex(t, b, db, table, lost.Name) {
			t.Errorf("CreateSchema did not put back index %s", lost.Name)
		}
	})
}

// hasIndex asks the database's catalog for an index of table.
func hasIndex(t *testing.T, b backend, db interface {
	QueryRow(string, ...any) *sql.Row
}, table, name string) bool {
	t.Helper()
	query := map[string]string{
		"mysql":      "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?",
		"postgresql": "SELECT COUNT(*) FROM pg_indexes WHERE tablename = lower($1) AND indexname = lower($2)",
		"sqlite":     "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name = ?",
	}[b.dialect.String()]
	var n int
	if err := db.QueryRow(query, table, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
