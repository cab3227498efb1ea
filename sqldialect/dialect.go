// Package sqldialect is the flavour of SQL the module's tables speak: the
// transactional outbox (sqlmq), the idempotency store, the schema registry
// and the stream checkpoints all build their statements through it, so the
// differences between MySQL/MariaDB, PostgreSQL and SQLite (placeholders,
// row locks, insert-if-absent, how a time is stored, which names are safe to
// put in SQL text) are written once.
package sqldialect

import (
	"database/sql"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dialect is one flavour of SQL. Use the MySQL, PostgreSQL and SQLite values;
// the zero Dialect is MySQL.
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

// String names the dialect.
func (d Dialect) String() string { return d.normal().name }

func (d Dialect) normal() Dialect {
	if d.name == "" {
		return MySQL
	}
	return d
}

// IsMySQL reports whether d is MySQL or MariaDB (the zero Dialect is).
func (d Dialect) IsMySQL() bool { return d.normal() == MySQL }

// IsPostgreSQL reports whether d is PostgreSQL.
func (d Dialect) IsPostgreSQL() bool { return d.normal() == PostgreSQL }

// IsSQLite reports whether d is SQLite.
func (d Dialect) IsSQLite() bool { return d.normal() == SQLite }

// Rebind turns the ? placeholders of query into the dialect's own ($1, $2,
// ... on PostgreSQL), so one query text serves every dialect.
func (d Dialect) Rebind(query string) string {
	if !d.IsPostgreSQL() {
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

// Placeholders returns "?,?,?" for n values (Rebind turns them into the
// dialect's own).
func Placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}

// LockClause is appended to a SELECT that claims rows, so that concurrent
// claimers skip each other's rows instead of waiting or taking them twice.
// SQLite has a single writer and needs none.
func (d Dialect) LockClause() string {
	if d.IsSQLite() {
		return ""
	}
	return " FOR UPDATE SKIP LOCKED"
}

// IgnoreDuplicate is appended to an INSERT so that a row whose key is
// already there is left as it is and the statement succeeds, affecting no
// row. column is any column of the table (MySQL has no DO NOTHING and needs
// an assignment that changes nothing).
func (d Dialect) IgnoreDuplicate(column string) string {
	if d.IsMySQL() {
		return " ON DUPLICATE KEY UPDATE " + column + " = " + column
	}
	return " ON CONFLICT DO NOTHING"
}

// TxOptions returns the options for a transaction at level; SQLite accepts
// only its own (serializable) isolation, so it gets none.
func (d Dialect) TxOptions(level sql.IsolationLevel) *sql.TxOptions {
	if d.IsSQLite() {
		return nil
	}
	return &sql.TxOptions{Isolation: level}
}

// TimeText is how a time is stored where the database has no time type
// (SQLite): fixed-width UTC text, which compares in time order.
const TimeText = "2006-01-02 15:04:05.000000"

// Time is t as the dialect stores it in a time column: a UTC time.Time, or
// TimeText on SQLite.
func (d Dialect) Time(t time.Time) any {
	if d.IsSQLite() {
		return t.UTC().Format(TimeText)
	}
	return t.UTC()
}

// Timestamp scans a time column whether the driver hands it over as a time or
// as text (MySQL without parseTime, SQLite), in UTC.
type Timestamp struct{ time.Time }

// Scan implements sql.Scanner.
func (t *Timestamp) Scan(value any) error {
	switch v := value.(type) {
	case time.Time:
		t.Time = v.UTC()
		return nil
	case []byte:
		return t.parse(string(v))
	case string:
		return t.parse(v)
	case nil:
		t.Time = time.Time{}
		return nil
	}
	return fmt.Errorf("sqldialect: a %T is not a time", value)
}

func (t *Timestamp) parse(text string) error {
	for _, layout := range []string{TimeText, "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", time.RFC3339Nano} {
		if parsed, err := time.Parse(layout, text); err == nil {
			t.Time = parsed.UTC()
			return nil
		}
	}
	return fmt.Errorf("sqldialect: %q is not a time in any layout this module writes", text)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$`)

// IsTableName reports whether name is a plain identifier, optionally
// schema.table: the only table names this module puts into SQL text.
func IsTableName(name string) bool { return identifier.MatchString(name) }

// CheckTable returns an error naming owner (the package asking, "sqlmq",
// "idempotency") when table is not a plain identifier.
func CheckTable(owner, table string) error {
	if !IsTableName(table) {
		return fmt.Errorf("%s: table name %q is not a plain identifier; use letters, digits and underscores (optionally schema.table)", owner, table)
	}
	return nil
}

// BareName is table without its schema: the part index and constraint names
// are made from.
func BareName(table string) string { return table[strings.LastIndexByte(table, '.')+1:] }
