package sqlmq

import (
	"database/sql"
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Dialect is the flavour of SQL the outbox speaks. Use the MySQL, PostgreSQL and
// SQLite values; the zero Dialect is MySQL.
type Dialect struct {
	name string
}

var (
	// MySQL is MySQL 8 and MariaDB 10.6 or later (SKIP LOCKED is required when
	// several instances share a table).
	MySQL = Dialect{name: "mysql"}
	// PostgreSQL is PostgreSQL 9.5 or later.
	PostgreSQL = Dialect{name: "postgresql"}
	// SQLite is SQLite 3.35 or later; it has one writer, so claims need no locks.
	SQLite = Dialect{name: "sqlite"}
)

//go:embed schema_mysql.sql
var schemaMySQL string

//go:embed schema_postgresql.sql
var schemaPostgreSQL string

//go:embed schema_sqlite.sql
var schemaSQLite string

// String names the dialect.
func (d Dialect) String() string { return d.normal().name }

func (d Dialect) normal() Dialect {
	if d.name == "" {
		return MySQL
	}
	return d
}

// Schema returns the DDL that creates the outbox table "Messages" and its
// indexes in this dialect. The library never runs it: apply it with your
// migrations.
func Schema(d Dialect) string {
	switch d.normal() {
	case PostgreSQL:
		return schemaPostgreSQL
	case SQLite:
		return schemaSQLite
	default:
		return schemaMySQL
	}
}

// TableSchema is Schema for a table with another name (its indexes are named
// after it too).
func TableSchema(d Dialect, table string) (string, error) {
	if err := validTable(table); err != nil {
		return "", err
	}
	bare := table[strings.LastIndexByte(table, '.')+1:]
	ddl := strings.ReplaceAll(Schema(d), "ix_Messages_", "ix_"+bare+"_")
	return strings.ReplaceAll(ddl, "Messages", table), nil
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

// IsTableName reports whether name is a plain identifier, optionally
// schema.table: the only table names this module puts into SQL text. Other
// packages keeping tables of their own (patterns) check theirs with it.
func IsTableName(name string) bool { return identifier.MatchString(name) }

func validTable(table string) error {
	if !IsTableName(table) {
		return fmt.Errorf("sqlmq: table name %q is not a plain identifier; use letters, digits and underscores (optionally schema.table)", table)
	}
	return nil
}

// Rebind turns the ? placeholders of query into the dialect's own ($1, $2,
// ... on PostgreSQL), so one query text serves every dialect.
func (d Dialect) Rebind(query string) string {
	if d.normal() != PostgreSQL {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lockClause is appended to the SELECT that claims rows so that concurrent
// claimers skip each other's rows instead of waiting or taking them twice.
func (d Dialect) lockClause() string {
	if d.normal() == SQLite {
		return ""
	}
	return " FOR UPDATE SKIP LOCKED"
}

// placeholders returns "?,?,?" for n values.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

// txOptions returns the options for a transaction at level; SQLite accepts only
// its own (serializable) isolation.
func (d Dialect) txOptions(level sql.IsolationLevel) *sql.TxOptions {
	if d.normal() == SQLite {
		return nil
	}
	return &sql.TxOptions{Isolation: level}
}
