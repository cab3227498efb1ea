package sqlmq

import (
	_ "embed"
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
// indexes in this dialect. The library never runs it: apply it with your
// migrations.
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
