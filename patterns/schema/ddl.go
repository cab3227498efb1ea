package schema

import (
	"context"
	"fmt"

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
	return sqldialect.Script(r.Statements()...)
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
			"    CONSTRAINT " + r.versionIndex().Name + " UNIQUE (subject, version)\n)"}
	case r.dialect.IsPostgreSQL():
		return []string{r.portableTable("id BIGSERIAL PRIMARY KEY") + fingerprint + "\n)", r.dialect.CreateIndex(r.versionIndex())}
	default:
		return []string{r.portableTable("id INTEGER PRIMARY KEY AUTOINCREMENT") + fingerprint + "\n)", r.dialect.CreateIndex(r.versionIndex())}
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

// versionIndex is the unique index on (subject, version).
func (r *SQLRegistry) versionIndex() sqldialect.Index {
	return sqldialect.Index{Name: sqldialect.BareName(r.table) + "_subject_version", Table: r.table, Columns: []string{"subject", "version"}, Unique: true}
}

// CreateTable creates what is missing of the registry's table on its database
// and changes nothing that is there: the table, and its unique index on
// (subject, version), which a table another AceMQ library created lacks. It is
// safe to call on every start; the database user needs the right to create
// the table and the index.
func (r *SQLRegistry) CreateTable(ctx context.Context) error {
	if _, err := r.db.ExecContext(ctx, r.Statements()[0]); err != nil {
		return fmt.Errorf("schema: create %s: %w", r.table, err)
	}
	if err := r.dialect.EnsureIndex(ctx, r.db, r.versionIndex()); err != nil {
		return fmt.Errorf("schema: create %s: %w", r.table, err)
	}
	return nil
}
