package sqldialect_test

import (
	"fmt"

	"github.com/warrenmq/messaging/sqldialect"
)

// One statement, written once with ? placeholders, in each dialect's form.
func ExampleDialect_Rebind() {
	query := "SELECT payload FROM messages WHERE id = ? AND status = ?"
	for _, dialect := range []sqldialect.Dialect{sqldialect.MySQL, sqldialect.PostgreSQL, sqldialect.SQLite} {
		fmt.Printf("%s: %s%s\n", dialect, dialect.Rebind(query), dialect.LockClause())
	}
	// Output:
	// mysql: SELECT payload FROM messages WHERE id = ? AND status = ? FOR UPDATE SKIP LOCKED
	// postgresql: SELECT payload FROM messages WHERE id = $1 AND status = $2 FOR UPDATE SKIP LOCKED
	// sqlite: SELECT payload FROM messages WHERE id = ? AND status = ?
}

// A migration's DDL split into statements a driver runs one at a time, an
// index in its idempotent form, and the check every table name passes.
func ExampleStatements() {
	ddl := `CREATE TABLE IF NOT EXISTS claims (id VARCHAR(64) PRIMARY KEY, owner VARCHAR(64) NOT NULL);
CREATE TABLE IF NOT EXISTS claim_log (id VARCHAR(64) NOT NULL, at TIMESTAMP NOT NULL);`
	for _, statement := range sqldialect.Statements(ddl) {
		fmt.Println(statement)
	}
	index := sqldialect.Index{Name: "claims_by_owner", Table: "claims", Columns: []string{"owner"}}
	fmt.Println(sqldialect.PostgreSQL.CreateIndex(index))
	fmt.Println(sqldialect.IsTableName("app.claims"), sqldialect.IsTableName("claims; DROP TABLE claims"))
	// Output:
	// CREATE TABLE IF NOT EXISTS claims (id VARCHAR(64) PRIMARY KEY, owner VARCHAR(64) NOT NULL)
	// CREATE TABLE IF NOT EXISTS claim_log (id VARCHAR(64) NOT NULL, at TIMESTAMP NOT NULL)
	// CREATE INDEX IF NOT EXISTS claims_by_owner ON claims (owner)
	// true false
}
