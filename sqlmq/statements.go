package sqlmq

import "github.com/warrenmq/messaging/sqldialect"

// Statements splits DDL from Schema or TableSchema into single statements,
// without comments, for drivers that run one statement per Exec. It is
// sqldialect.Statements, which the module's other tables use too.
func Statements(ddl string) []string { return sqldialect.Statements(ddl) }
