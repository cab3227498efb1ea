package schema

import (
	"context"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging/sqldialect"
)

// Schema returns the DDL that creates the registry's table in its dialect,
// each statement ending in a semicolon: for a migration tool (goose,
// golang-migrate, atlas), or run it with CreateTable. Every statement is
// idempotent (CREATE ... IF NOT EXISTS). Beside the other AceMQ libraries'
// UNIQUE (subject, fingerprint), it declares a unique index on (subject,
// version), which is what keeps two different definitions registered at the
// same moment from both becoming the same version; CreateTable adds it to a
// table another library created. On MySQL the subject is compared byte for
// byte (utf8mb4_bin), as the other dialects compare it.
func (r *SQLRegistry) Schema() string {
	return strings.Join(r.Statements(), ";\n") + ";\n"
}

// Statements is Schema one statement at a time, without the semicolons.
func (r *SQLRegistry) Statements() []string {
	bare := sqldialect.BareName(r.table)
	fingerprint := ",\n    CONSTRAINT " + bare + "_subject_fingerprint UNIQUE (subject, fingerprint)"
	switch {
	case r.dialect.IsMySQL():
		return []string{"CREATE TABLE IF NOT EXISTS " + r.table + " (\n" +
			"    id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,\n" +
			"    subject VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n" +
			"    version INTEGER NOT NULL,\n" +
			"    format VARCHAR(64) NOT NULL,\n" +
			"    definition LONGTEXT NOT NULL,\n" +
			"    fingerprint VARCHAR(64) NOT NULL,\n" +
			"    registered_at DATETIME(6) NOT NULL" + fingerprint + ",\n" +
			"    CONSTRAINT " + r.versionIndex() + " UNIQUE (subject, version)\n)"}
	case r.dialect.IsPostgreSQL():
		return []string{r.portableTable("id BIGSERIAL PRIMARY KEY") + fingerprint + "\n)", r.versionIndexStatement()}
	default:
		return []string{r.portableTable("id INTEGER PRIMARY KEY AUTOINCREMENT") + fingerprint + "\n)", r.versionIndexStatement()}
	}
}

// portableTable is the PostgreSQL and SQLite table up to its constraints.
func (r *SQLRegistry) portableTable(id string) string {
	return "CREATE TABLE IF NOT EXISTS " + r.table + " (\n" +
		"    " + id + ",\n" +
		"    subject VARCHAR(255) NOT NULL,\n" +
		"    version INTEGER NOT NULL,\n" +
		"    format VARCHAR(64) NOT NULL,\n" +
		"    definition TEXT NOT NULL,\n" +
		"    fingerprint VARCHAR(64) NOT NULL,\n" +
		"    registered_at TIMESTAMP NOT NULL"
}

func (r *SQLRegistry) versionIndex() string { return sqldialect.BareName(r.table) + "_subject_version" }

func (r *SQLRegistry) versionIndexStatement() string {
	return "CREATE UNIQUE INDEX IF NOT EXISTS " + r.versionIndex() + " ON " + r.table + " (subject, version)"
}

// CreateTable creates what is missing of the registry's table on its database
// and changes nothing that is there: the table, and its unique index on
// (subject, version), which a table another AceMQ library created lacks. It is
// safe to call on every start; the database user needs the right to create
// the table and the index.
func (r *SQLRegistry) CreateTable(ctx context.Context) error {
	statements := r.Statements()
	if _, err := r.db.ExecContext(ctx, statements[0]); err != nil {
		return fmt.Errorf("schema: create %s: %w", r.table, err)
	}
	if !r.dialect.IsMySQL() {
		if _, err := r.db.ExecContext(ctx, statements[1]); err != nil {
			return fmt.Errorf("schema: create index %s: %w", r.versionIndex(), err)
		}
		return nil
	}
	// MySQL has no CREATE INDEX IF NOT EXISTS: look first.
	bare := sqldialect.BareName(r.table)
	var schema any
	if bare != r.table {
		schema = strings.TrimSuffix(r.table, "."+bare)
	}
	var present int
	if err := r.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.statistics WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ? AND index_name = ?",
		schema, bare, r.versionIndex()).Scan(&present); err != nil {
		return fmt.Errorf("schema: look for index %s: %w", r.versionIndex(), err)
	}
	if present == 0 {
		if _, err := r.db.ExecContext(ctx, "CREATE UNIQUE INDEX "+r.versionIndex()+" ON "+r.table+" (subject, version)"); err != nil {
			return fmt.Errorf("schema: create index %s: %w", r.versionIndex(), err)
		}
	}
	return nil
}
