package sqlmq

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging/sqldialect"
)

//go:embed schema_mysql.sql
var schemaMySQL string

//go:embed schema_postgresql.sql
var schemaPostgreSQL string

//go:embed schema_sqlite.sql
var schemaSQLite string

// Schema returns the DDL that creates the outbox table "Messages" and its
// indexes in this dialect, each only when it is missing (CREATE ... IF NOT
// EXISTS; on MySQL the indexes are declared inside the table, since MySQL 8
// has no CREATE INDEX IF NOT EXISTS), so applying it twice changes nothing.
// Put it in your migrations (split it with Statements for drivers that run one
// statement per Exec), or let CreateSchema apply it at start.
func Schema(d sqldialect.Dialect) string {
	switch {
	case d.IsPostgreSQL():
		return schemaPostgreSQL
	case d.IsSQLite():
		return schemaSQLite
	default:
		return schemaMySQL
	}
}

// TableSchema is Schema for a table with another name (its indexes are named
// after it too).
func TableSchema(d sqldialect.Dialect, table string) (string, error) {
	if err := sqldialect.CheckTable("sqlmq", table); err != nil {
		return "", err
	}
	bare := sqldialect.BareName(table)
	ddl := strings.ReplaceAll(Schema(d), "ix_Messages_", "ix_"+bare+"_")
	return strings.ReplaceAll(ddl, "Messages", table), nil
}

// CreateSchema creates in db the outbox table named table (DefaultTable when
// empty) and whichever of its indexes are missing: nothing when everything
// is there, so a service may call it at every start. It runs TableSchema's
// statements, then asks the catalog for the indexes (a table created by an
// earlier version's DDL or by hand may lack one). The database user needs
// the rights to create tables and indexes; a team that applies DDL through
// migrations uses Schema instead.
func CreateSchema(ctx context.Context, db *sql.DB, d sqldialect.Dialect, table string) error {
	if table == "" {
		table = DefaultTable
	}
	ddl, err := TableSchema(d, table)
	if err != nil {
		return err
	}
	if err := d.CreateTable(ctx, db, ddl, outboxIndexes(table)...); err != nil {
		return fmt.Errorf("sqlmq: create the outbox table %s: %w", table, err)
	}
	return nil
}

// outboxIndexes are the indexes every outbox table has, as its DDL declares
// them.
func outboxIndexes(table string) []sqldialect.Index {
	prefix := "ix_" + sqldialect.BareName(table) + "_"
	return []sqldialect.Index{
		{Name: prefix + "pending", Table: table, Columns: []string{"dispatched_us", "retired_us", "id"}},
		{Name: prefix + "message_id", Table: table, Columns: []string{"message_id"}},
	}
}
