package idempotency

import (
	"context"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging/sqldialect"
)

// Schema returns the DDL that creates the store's table and its index in its
// dialect, each statement ending in a semicolon: for a migration tool (goose,
// golang-migrate, atlas), or run it with CreateTable. Every statement is
// idempotent (CREATE ... IF NOT EXISTS; on MySQL the index is inline). A table
// created by another AceMQ library lacks the owner column and needs
//
//	ALTER TABLE acemq_idempotency ADD COLUMN claimed_by VARCHAR(36) NOT NULL DEFAULT '';
//
// (and, if it was created before their 0.8, the confirmed column:
// ADD COLUMN confirmed BOOLEAN NOT NULL DEFAULT TRUE), which CreateTable adds.
// Their rows keep working: the default, an empty owner, is one no claim of
// this store carries.
func (s *SQLStore) Schema() string {
	return sqldialect.Script(s.Statements()...)
}

// Statements is Schema one statement at a time, without the semicolons.
func (s *SQLStore) Statements() []string {
	index := s.index()
	if s.dialect.IsMySQL() {
		return []string{"CREATE TABLE IF NOT EXISTS " + s.table + " (\n" +
			"    `key` VARCHAR(255) PRIMARY KEY,\n" +
			"    handled_at DATETIME(6) NOT NULL,\n" +
			"    confirmed BOOLEAN NOT NULL DEFAULT FALSE,\n" +
			"    claimed_by VARCHAR(36) NOT NULL DEFAULT '',\n" +
			"    INDEX " + index.Name + " (handled_at)\n" +
			")"}
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS " + s.table + " (\n" +
			"    key VARCHAR(255) PRIMARY KEY,\n" +
			"    handled_at TIMESTAMP NOT NULL,\n" +
			"    confirmed BOOLEAN NOT NULL DEFAULT FALSE,\n" +
			"    claimed_by VARCHAR(36) NOT NULL DEFAULT ''\n" +
			")",
		s.dialect.CreateIndex(index),
	}
}

// addedColumns are the columns a table made by an earlier layout may lack, in
// the order they were added, with what ADD COLUMN gives each.
var addedColumns = []struct{ name, definition string }{
	{"confirmed", "BOOLEAN NOT NULL DEFAULT TRUE"}, // a claim of before it was always confirmed work
	{"claimed_by", "VARCHAR(36) NOT NULL DEFAULT ''"},
}

// CreateTable creates what is missing of the store's table on its database
// and changes nothing that is there: the table and its handled_at index, and,
// on a table another AceMQ library (or an earlier layout) created, the
// columns it lacks. It is safe to call on every start and from several
// processes at once; the database user needs the right to create and alter
// the table.
func (s *SQLStore) CreateTable(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, s.Statements()[0]); err != nil {
		return fmt.Errorf("idempotency: create %s: %w", s.table, err)
	}
	for _, column := range addedColumns {
		present, err := s.count(ctx, s.columnQuery(), column.name)
		if err != nil {
			return fmt.Errorf("idempotency: look for column %s of %s: %w", column.name, s.table, err)
		}
		if present > 0 {
			continue
		}
		if _, err := s.db.ExecContext(ctx, "ALTER TABLE "+s.table+" ADD COLUMN "+column.name+" "+column.definition); err != nil && !s.hasColumn(ctx, column.name) {
			return fmt.Errorf("idempotency: add column %s to %s: %w", column.name, s.table, err)
		}
	}
	if err := s.dialect.EnsureIndex(ctx, s.db, s.index()); err != nil {
		return fmt.Errorf("idempotency: create %s: %w", s.table, err)
	}
	return nil
}

// hasColumn says whether name is there after an ADD COLUMN failed: another
// process added it at the same moment.
func (s *SQLStore) hasColumn(ctx context.Context, name string) bool {
	present, err := s.count(ctx, s.columnQuery(), name)
	return err == nil && present > 0
}

// columnQuery counts the table's columns of a name.
func (s *SQLStore) columnQuery() string {
	switch {
	case s.dialect.IsSQLite():
		return "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?"
	case s.dialect.IsPostgreSQL():
		return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = COALESCE(?, current_schema()) AND table_name = ? AND column_name = ?"
	}
	return "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ? AND column_name = ?"
}

// count runs a catalogue query about the store's table and name: the
// table's schema (NULL: the connection's) and bare name come first, except
// on SQLite, which takes the table's name alone.
func (s *SQLStore) count(ctx context.Context, query, name string) (int, error) {
	bare := sqldialect.BareName(s.table)
	args := []any{bare, name}
	if !s.dialect.IsSQLite() {
		var schema any
		if bare != s.table {
			schema = strings.TrimSuffix(s.table, "."+bare)
		}
		if s.dialect.IsPostgreSQL() { // unquoted names are folded to lower case
			bare = strings.ToLower(bare)
			if schema != nil {
				schema = strings.ToLower(schema.(string))
			}
		}
		args = []any{schema, bare, name}
	}
	var n int
	err := s.db.QueryRowContext(ctx, s.dialect.Rebind(query), args...).Scan(&n)
	return n, err
}

// index is the handled_at index.
func (s *SQLStore) index() sqldialect.Index {
	return sqldialect.Index{Name: sqldialect.BareName(s.table) + "_handled_at", Table: s.table, Columns: []string{"handled_at"}}
}
