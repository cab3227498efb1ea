package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging/sqldialect"
)

// DB is what the SQL store needs of a database: *sql.DB, *sql.Conn and *sql.Tx
// all have it, so a store over a *sql.Tx writes in that transaction.
type DB interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQLStore keeps the keys in a table shared by every worker and process that
// uses it: MySQL/MariaDB, PostgreSQL or SQLite, in the table layout of the
// other AceMQ libraries (key, handled_at, confirmed). Times are the process's
// clock, in UTC: the processes sharing a table need clocks that agree to well
// within the claim timeout. It is safe for concurrent use when db is.
type SQLStore struct {
	db      DB
	dialect sqldialect.Dialect
	lease   time.Duration
	now     func() time.Time
	table   string

	insert, reclaim, lookup, confirm, release, prune string
}

// NewSQLStore returns a store over db in dialect (sqldialect.MySQL,
// sqldialect.PostgreSQL or sqldialect.SQLite). StoreOptions.Table, ClaimTimeout and Clock apply. It
// creates nothing: apply Schema with your migrations. The error is a table
// name that is not a plain identifier.
func NewSQLStore(db DB, dialect sqldialect.Dialect, options ...StoreOption) (*SQLStore, error) {
	c := newStoreConfig(options)
	if err := sqldialect.CheckTable("idempotency", c.table); err != nil {
		return nil, err
	}
	s := &SQLStore{db: db, dialect: dialect, lease: c.claimTimeout, now: c.now, table: c.table}
	key := s.keyColumn()
	ignore := dialect.IgnoreDuplicate(key)
	t := s.table
	s.insert = s.dialect.Rebind("INSERT INTO " + t + " (" + key + ", handled_at, confirmed) VALUES (?, ?, FALSE)" + ignore)
	s.reclaim = s.dialect.Rebind("UPDATE " + t + " SET handled_at = ? WHERE " + key + " = ? AND confirmed = FALSE AND handled_at < ?")
	s.lookup = s.dialect.Rebind("SELECT confirmed FROM " + t + " WHERE " + key + " = ?")
	s.confirm = s.dialect.Rebind("UPDATE " + t + " SET confirmed = TRUE, handled_at = ? WHERE " + key + " = ?")
	s.release = s.dialect.Rebind("DELETE FROM " + t + " WHERE " + key + " = ? AND confirmed = FALSE")
	s.prune = s.dialect.Rebind("DELETE FROM " + t + " WHERE handled_at < ?")
	return s, nil
}

// Schema returns the DDL that creates the store's table and its index in its
// dialect. The library never runs it: put it in a migration. A table created
// by another AceMQ library before 0.8 lacks confirmed and needs
//
//	ALTER TABLE acemq_idempotency ADD COLUMN confirmed BOOLEAN NOT NULL DEFAULT TRUE;
func (s *SQLStore) Schema() string {
	index := sqldialect.BareName(s.table) + "_handled_at"
	if s.dialect.IsMySQL() {
		return "CREATE TABLE IF NOT EXISTS " + s.table + " (\n" +
			"    `key` VARCHAR(255) PRIMARY KEY,\n" +
			"    handled_at DATETIME(6) NOT NULL,\n" +
			"    confirmed BOOLEAN NOT NULL DEFAULT FALSE,\n" +
			"    INDEX " + index + " (handled_at)\n" +
			");\n"
	}
	return "CREATE TABLE IF NOT EXISTS " + s.table + " (\n" +
		"    key VARCHAR(255) PRIMARY KEY,\n" +
		"    handled_at TIMESTAMP NOT NULL,\n" +
		"    confirmed BOOLEAN NOT NULL DEFAULT FALSE\n" +
		");\n" +
		"CREATE INDEX IF NOT EXISTS " + index + " ON " + s.table + " (handled_at);\n"
}

// TryClaim claims key: it inserts an unconfirmed claim, or retakes one whose
// lease ended; otherwise it reads the row: confirmed is Duplicate, a live
// claim (or a row released in between) is InProgress. A driver that cannot
// report the rows a statement changed makes it fail rather than guess.
func (s *SQLStore) TryClaim(ctx context.Context, key string) (ClaimResult, error) {
	now := s.now().UTC()
	inserted, err := s.exec(ctx, "claim", key, s.insert, key, s.dialect.Time(now))
	if err != nil {
		return 0, err
	}
	if inserted == 1 {
		return Claimed, nil
	}
	retaken, err := s.exec(ctx, "claim", key, s.reclaim, s.dialect.Time(now), key, s.dialect.Time(now.Add(-s.lease)))
	if err != nil {
		return 0, err
	}
	if retaken == 1 {
		return Claimed, nil
	}
	var confirmed bool
	switch err := s.db.QueryRowContext(ctx, s.lookup, key).Scan(&confirmed); {
	case errors.Is(err, sql.ErrNoRows):
		return InProgress, nil // released between the statements: look again shortly
	case err != nil:
		return 0, fmt.Errorf("idempotency: claim key %q in %s: %w", key, s.table, err)
	case confirmed:
		return Duplicate, nil
	default:
		return InProgress, nil
	}
}

// Claim is TryClaim reduced to whether the caller now holds key.
func (s *SQLStore) Claim(ctx context.Context, key string) (bool, error) {
	result, err := s.TryClaim(ctx, key)
	return result == Claimed, err
}

// Confirm records the work for key as done.
func (s *SQLStore) Confirm(ctx context.Context, key string) error {
	_, err := s.exec(ctx, "confirm", key, s.confirm, s.dialect.Time(s.now().UTC()), key)
	return err
}

// Release forgets an unconfirmed claim on key, so the next delivery runs the
// handler; a confirmed key stays.
func (s *SQLStore) Release(ctx context.Context, key string) error {
	_, err := s.exec(ctx, "release", key, s.release, key)
	return err
}

// Prune deletes the keys claimed or confirmed more than olderThan ago and
// returns how many. Nothing runs it on a timer: call it from a job of yours,
// with olderThan well over both the claim timeout and the longest a message
// can be redelivered after it was handled.
func (s *SQLStore) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.prune, s.dialect.Time(s.now().UTC().Add(-olderThan)))
	if err != nil {
		return 0, fmt.Errorf("idempotency: prune %s: %w", s.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("idempotency: prune %s: the driver cannot report the rows deleted: %w", s.table, err)
	}
	return n, nil
}

// exec runs one statement and returns the rows it changed.
func (s *SQLStore) exec(ctx context.Context, operation, key, query string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("idempotency: %s key %q in %s: %w", operation, key, s.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("idempotency: %s key %q in %s: the driver cannot report the rows changed, and the store will not guess: %w", operation, key, s.table, err)
	}
	return n, nil
}

// keyColumn is the key column, quoted where the word is reserved (MySQL).
func (s *SQLStore) keyColumn() string {
	if s.dialect.IsMySQL() {
		return "`key`"
	}
	return "key"
}
