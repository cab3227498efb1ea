package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

// MaxKeyLength is the longest key, in characters, the SQL store's key column
// holds (VARCHAR(255), the layout every AceMQ library uses). TryClaim refuses
// a longer key at once, as a messaging.Fatal error, rather than sending it to
// a database that fails the claim (MySQL: "Data too long") or cuts it short.
const MaxKeyLength = 255

// DB is what the SQL store needs of a database, sqldialect.DB: *sql.DB,
// *sql.Conn and *sql.Tx all have it, so a store over a *sql.Tx writes in that
// transaction.
type DB = sqldialect.DB

// SQLStore keeps the keys in a table shared by every worker and process that
// uses it: MySQL/MariaDB, PostgreSQL or SQLite, in the table layout of the
// other AceMQ libraries (key, handled_at, confirmed) with one column more,
// claimed_by, the owner token that fences a claim. Times are the process's
// clock, in UTC: the processes sharing a table need clocks that agree to well
// within the claim timeout. It is safe for concurrent use when db is.
type SQLStore struct {
	db      DB
	dialect sqldialect.Dialect
	lease   time.Duration
	table   string

	insertHead, reclaim, reclaimConfirmed, lookupAll, owner, renew, confirmAll, release, releaseOwn, prune string

	prepared *prepared // MySQL over a *sql.DB: statements kept prepared on it
	ownTx    bool      // db is a transaction of prepared.db (InTransaction's batch)
}

// NewSQLStore returns a store over db in dialect (sqldialect.MySQL,
// sqldialect.PostgreSQL or sqldialect.SQLite). StoreOptions.Table and
// ClaimTimeout apply. It creates nothing: apply Schema with your migrations.
// The error is a table name that is not a plain identifier, or
// ErrClientFoundRows for a MySQL handle opened with clientFoundRows=true.
func NewSQLStore(db DB, dialect sqldialect.Dialect, options ...StoreOption) (*SQLStore, error) {
	c := newStoreConfig(options)
	if err := sqldialect.CheckTable("idempotency", c.table); err != nil {
		return nil, err
	}
	if dialect.IsMySQL() && reportsFoundRows(db) {
		return nil, ErrClientFoundRows
	}
	s := &SQLStore{db: db, dialect: dialect, lease: c.claimTimeout, table: c.table}
	if handle, ok := db.(*sql.DB); ok && handle != nil && dialect.IsMySQL() {
		s.prepared = &prepared{db: handle, byQuery: map[string]*sql.Stmt{}}
	}
	key := s.keyColumn()
	t, mine := s.table, " WHERE "+key+" = ? AND claimed_by = ? AND confirmed = FALSE"
	// insertHead, lookupAll and confirmAll are completed (and rebound) per
	// batch size: see insertQuery and keysQuery.
	s.insertHead = "INSERT INTO " + t + " (" + key + ", handled_at, confirmed, claimed_by) VALUES "
	retake := " WHERE " + key + " = ? AND confirmed = FALSE AND handled_at < ?"
	s.reclaim = dialect.Rebind("UPDATE " + t + " SET handled_at = ?, claimed_by = ?" + retake)
	s.reclaimConfirmed = dialect.Rebind("UPDATE " + t + " SET confirmed = TRUE, handled_at = ?, claimed_by = ?" + retake)
	s.lookupAll = "SELECT " + key + ", claimed_by, confirmed, handled_at < ? FROM " + t + " WHERE " + key + " IN ("
	s.owner = dialect.Rebind("SELECT claimed_by, confirmed FROM " + t + " WHERE " + key + " = ?")
	s.renew = dialect.Rebind("UPDATE " + t + " SET handled_at = ?" + mine)
	s.confirmAll = "UPDATE " + t + " SET confirmed = TRUE, handled_at = ? WHERE claimed_by = ? AND confirmed = FALSE AND " + key + " IN ("
	s.release = dialect.Rebind("DELETE FROM " + t + mine)
	s.releaseOwn = dialect.Rebind("DELETE FROM " + t + " WHERE " + key + " = ? AND claimed_by = ?")
	s.prune = dialect.Rebind("DELETE FROM " + t + " WHERE handled_at < ?")
	return s, nil
}

// TryClaim claims key: it inserts an unconfirmed claim with a new owner
// token unless the key is there; if it is, it reads the row: confirmed is
// Duplicate, a live claim (or a row released in between) is InProgress, and
// a claim whose lease ended is retaken (the token changes, so the former
// holder can no longer renew, confirm or release it). It is TryClaimAll of
// one key. A driver that cannot report the rows a statement changed makes it
// fail rather than guess.
func (s *SQLStore) TryClaim(ctx context.Context, key string) (Claim, error) {
	claims, err := s.claimAll(ctx, []string{key}, false)
	if err != nil {
		return Claim{}, err
	}
	return claims[0], nil
}

// checkKey refuses a key the key column cannot hold, as a messaging.Fatal
// error: the message's own, never the store's.
func (s *SQLStore) checkKey(key string) error {
	if n := utf8.RuneCountInString(key); n > MaxKeyLength {
		return messaging.Fatal(fmt.Errorf("idempotency: the key %q is %d characters long and %s holds keys of at most %d (VARCHAR(%d)), so this message cannot be guarded and is refused: give it a shorter id, or a shorter key with Options.IdempotentBy (a hash of the long one)",
			shorten(key), n, s.table, MaxKeyLength, MaxKeyLength))
	}
	return nil
}

// Renew restarts the lease of the caller's claim; ErrClaimLost when the key
// is no longer held by it.
func (s *SQLStore) Renew(ctx context.Context, c Claim) error {
	return s.own(ctx, "renew", c, s.renew, s.dialect.Time(time.Now().UTC()), c.Key, c.Owner)
}

// Confirm records the work of the caller's claim as done; ErrClaimLost when
// the key is no longer held by it (its lease ended and another delivery took
// it).
func (s *SQLStore) Confirm(ctx context.Context, c Claim) error {
	if errs := s.ConfirmAll(ctx, []Claim{c}); errs != nil {
		return errs[0]
	}
	return nil
}

// Release forgets the caller's unconfirmed claim, so the next delivery runs
// the handler; a confirmed key, or one another delivery holds, stays.
func (s *SQLStore) Release(ctx context.Context, c Claim) error {
	_, err := s.exec(ctx, "release", c.Key, s.release, c.Key, c.Owner)
	return err
}

// own runs a statement that changes the caller's own claim, and returns
// ErrClaimLost when it changed nothing.
func (s *SQLStore) own(ctx context.Context, operation string, c Claim, query string, args ...any) error {
	n, err := s.exec(ctx, operation, c.Key, query, args...)
	if err != nil {
		return err
	}
	if n == 1 {
		return nil
	}
	// MySQL counts the rows a statement changed, not those it matched: a
	// renewal within the same microsecond as the last changes nothing and is
	// still the caller's claim.
	var owner string
	var confirmed bool
	switch err := s.db.QueryRowContext(ctx, s.owner, c.Key).Scan(&owner, &confirmed); {
	case err == nil && owner == c.Owner && c.Owner != "" && !confirmed:
		return nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("idempotency: %s key %q in %s: %w", operation, c.Key, s.table, err)
	}
	return fmt.Errorf("idempotency: %s key %q in %s: %w", operation, c.Key, s.table, ErrClaimLost)
}

// Prune deletes the keys claimed or confirmed more than olderThan ago and
// returns how many. Nothing runs it on a timer: call it from a job of yours,
// with olderThan well over both the claim timeout and the longest a message
// can be redelivered after it was handled.
func (s *SQLStore) Prune(ctx context.Context, olderThan time.Duration) (int64, error) {
	res, err := s.db.ExecContext(ctx, s.prune, s.dialect.Time(time.Now().UTC().Add(-olderThan)))
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
	res, err := s.run(ctx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("idempotency: %s key %q in %s: %w", operation, key, s.table, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("idempotency: %s key %q in %s: the driver cannot report the rows changed, and the store will not guess: %w", operation, key, s.table, err)
	}
	return n, nil
}

// shorten keeps the start of a key of more than 64 characters, for an error.
func shorten(key string) string {
	if runes := []rune(key); len(runes) > 64 {
		return string(runes[:32]) + "..."
	}
	return key
}

// keyColumn is the key column, quoted where the word is reserved (MySQL).
func (s *SQLStore) keyColumn() string {
	if s.dialect.IsMySQL() {
		return "`key`"
	}
	return "key"
}
