package sqlmq

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/warrenmq/messaging/sqldialect"
)

// store is every statement the outbox runs against its table.
type store struct {
	db      *sql.DB
	dialect sqldialect.Dialect
	table   string

	// mu guards the insert statements (see insert.go), prepared once on db
	// and reused by every committing transaction, so a commit does not
	// prepare and close a statement (two round trips and a parse) each time.
	mu      sync.Mutex
	inserts map[int]*sql.Stmt // by rows per statement
	// step is MySQL's auto_increment_increment, read once: the ids of one
	// multi-row INSERT are LAST_INSERT_ID(), then step apart. Zero until read.
	step   int64
	closed bool
}

func newStore(db *sql.DB, dialect sqldialect.Dialect, table string) *store {
	return &store{db: db, dialect: dialect, table: table, inserts: map[int]*sql.Stmt{}}
}

func (s *store) q(query string) string {
	return s.dialect.Rebind(strings.ReplaceAll(query, "{t}", s.table))
}

const pendingCondition = "dispatched_us IS NULL AND retired_us IS NULL"

// claim leases up to limit undispatched, unretired rows no instance holds (no
// lease, or one that has run out: an instance died, or the row was set aside
// and is due) to owner and returns them in id order, each with the lease it
// now holds.
//
// A row that cannot be read back into a dispatch is retired in the same
// transaction and returned in unreadable, so it never holds up the rows behind
// it.
func (s *store) claim(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) (rows []row, unreadable []unreadableRow, err error) {
	tx, err := s.db.BeginTx(ctx, s.dialect.TxOptions(sql.LevelReadCommitted))
	if err != nil {
		return nil, nil, fmt.Errorf("sqlmq: begin the claim of outbox rows: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	condition, arg := " AND (lease_until_us IS NULL OR lease_until_us <= ?)", any(micros(now))
	var ids []int64
	if s.dialect.IsSQLite() {
		ids, err = s.queryIDs(ctx, tx, "UPDATE {t} SET lease_owner = ?, lease_until_us = ? WHERE id IN (SELECT id FROM {t} WHERE "+
			pendingCondition+condition+" ORDER BY id LIMIT ?) RETURNING id",
			owner, micros(now.Add(lease)), arg, limit)
	} else {
		ids, err = s.queryIDs(ctx, tx, "SELECT id FROM {t} WHERE "+pendingCondition+condition+
			" ORDER BY id LIMIT ?"+s.dialect.LockClause(), arg, limit)
		if err == nil && len(ids) > 0 {
			_, err = tx.ExecContext(ctx, s.q("UPDATE {t} SET lease_owner = ?, lease_until_us = ? WHERE id IN ("+sqldialect.Placeholders(len(ids))+")"),
				append([]any{owner, micros(now.Add(lease))}, int64s(ids)...)...)
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sqlmq: claim outbox rows: %w", err)
	}
	if len(ids) > 0 {
		if rows, unreadable, err = s.read(ctx, tx, ids); err != nil {
			return nil, nil, err
		}
		for _, u := range unreadable {
			if _, err = tx.ExecContext(ctx, s.q("UPDATE {t} SET retired_us = ?, last_error = ? WHERE id = ?"),
				micros(now), truncate(u.Error()), u.id); err != nil {
				return nil, nil, fmt.Errorf("sqlmq: retire unreadable outbox row %d: %w", u.id, err)
			}
		}
	}
	if err = tx.Commit(); err != nil {
		return nil, nil, fmt.Errorf("sqlmq: commit the claim of %d outbox row(s): %w", len(ids), err)
	}
	for i := range rows {
		rows[i].leaseUntil = now.Add(lease)
	}
	return rows, unreadable, nil
}

// readOwn reads up to limit rows leased to owner and waiting to be published,
// with ids above after, in id order, each with the lease stored for it: the
// rows this instance's commits left in the table while its processor's
// channel was full. It neither locks nor writes: no other instance takes a
// row while its lease runs, and the processor renews a lease that is running
// out before it publishes the row (which also drops the rows another
// instance took after their lease expired). A row that cannot be read back
// is retired at once, so it never holds up the rows behind it.
func (s *store) readOwn(ctx context.Context, owner string, after int64, limit int, now time.Time) ([]row, []unreadableRow, error) {
	result, err := s.db.QueryContext(ctx, s.q("SELECT "+selectColumns+", lease_until_us FROM {t} WHERE "+pendingCondition+
		" AND lease_owner = ? AND id > ? ORDER BY id LIMIT ?"), owner, after, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlmq: read the outbox rows leased to %s: %w", owner, err)
	}
	defer func() { _ = result.Close() }()
	rows, unreadable, err := scanRows(result, scanLeasedRow)
	if err != nil {
		return nil, nil, err
	}
	if err := result.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlmq: read the outbox rows leased to %s: %w", owner, err)
	}
	_ = result.Close()
	for _, u := range unreadable {
		if _, err := s.db.ExecContext(ctx, s.q("UPDATE {t} SET retired_us = ?, last_error = ? WHERE id = ? AND "+pendingCondition),
			micros(now), truncate(u.Error()), u.id); err != nil {
			return nil, nil, fmt.Errorf("sqlmq: retire unreadable outbox row %d: %w", u.id, err)
		}
	}
	return rows, unreadable, nil
}

// scanLeasedRow scans a row and, after its columns, its lease.
func scanLeasedRow(s scanner) (row, error) {
	var until sql.NullInt64
	r, err := scanRow(leaseScanner{s, &until})
	if err == nil && until.Valid {
		r.leaseUntil = fromMicros(until.Int64)
	}
	return r, err
}

// leaseScanner scans a row and, after its columns, its lease.
type leaseScanner struct {
	scanner
	until *sql.NullInt64
}

func (l leaseScanner) Scan(dest ...any) error {
	return l.scanner.Scan(append(dest, l.until)...)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *store) queryIDs(ctx context.Context, db querier, query string, args ...any) ([]int64, error) {
	result, err := db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = result.Close() }()
	var ids []int64
	for result.Next() {
		var id int64
		if err := result.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, result.Err()
}

func (s *store) read(ctx context.Context, db querier, ids []int64) ([]row, []unreadableRow, error) {
	result, err := db.QueryContext(ctx, s.q("SELECT "+selectColumns+" FROM {t} WHERE id IN ("+sqldialect.Placeholders(len(ids))+") ORDER BY id"), int64s(ids)...)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlmq: read %d claimed outbox row(s): %w", len(ids), err)
	}
	defer func() { _ = result.Close() }()
	rows, unreadable, err := scanRows(result, scanRow)
	if err != nil {
		return nil, nil, err
	}
	if err := result.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlmq: read %d claimed outbox row(s): %w", len(ids), err)
	}
	return rows, unreadable, nil
}

// scanRows reads each row of result with scan, keeping apart those that
// cannot be turned back into a dispatch. It stops at the first other error,
// a failed scan; the caller checks result.Err.
func scanRows(result *sql.Rows, scan func(scanner) (row, error)) ([]row, []unreadableRow, error) {
	var rows []row
	var unreadable []unreadableRow
	for result.Next() {
		r, err := scan(result)
		var u unreadableRow
		switch {
		case errors.As(err, &u):
			unreadable = append(unreadable, u)
		case err != nil:
			return nil, nil, err
		default:
			rows = append(rows, r)
		}
	}
	return rows, unreadable, nil
}

// release gives up owner's leases on rows it did not publish, so another
// instance, or this service's next start, takes them at once instead of after
// the lease runs out. It returns how many rows it let go.
func (s *store) release(ctx context.Context, owner string) (int64, error) {
	result, err := s.db.ExecContext(ctx, s.q("UPDATE {t} SET lease_owner = NULL, lease_until_us = NULL WHERE lease_owner = ? AND "+pendingCondition), owner)
	if err != nil {
		return 0, fmt.Errorf("sqlmq: release the leases of %s: %w", owner, err)
	}
	return result.RowsAffected()
}

// renew extends owner's lease on ids and returns those still owned by owner and
// still waiting to be published; another instance may have taken the others
// after their lease expired.
func (s *store) renew(ctx context.Context, owner string, ids []int64, until time.Time) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	condition := " WHERE id IN (" + sqldialect.Placeholders(len(ids)) + ") AND lease_owner = ? AND " + pendingCondition
	args := append(int64s(ids), owner)
	result, err := s.db.ExecContext(ctx, s.q("UPDATE {t} SET lease_until_us = ?"+condition), append([]any{micros(until)}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("sqlmq: renew the lease on %d outbox row(s): %w", len(ids), err)
	}
	if affected, err := result.RowsAffected(); err == nil && affected == int64(len(ids)) {
		return ids, nil
	}
	kept, err := s.queryIDs(ctx, s.db, "SELECT id FROM {t}"+condition+" ORDER BY id", args...)
	if err != nil {
		return nil, fmt.Errorf("sqlmq: check the lease on %d outbox row(s): %w", len(ids), err)
	}
	return kept, nil
}

// markDispatched records that the broker confirmed ids and returns how many rows
// changed: fewer than len(ids) means another instance had already marked some.
func (s *store) markDispatched(ctx context.Context, ids []int64, now time.Time) (int64, error) {
	result, err := s.db.ExecContext(ctx, s.q("UPDATE {t} SET dispatched_us = ? WHERE id IN ("+sqldialect.Placeholders(len(ids))+") AND dispatched_us IS NULL"),
		append([]any{micros(now)}, int64s(ids)...)...)
	if err != nil {
		return 0, fmt.Errorf("sqlmq: mark %d confirmed outbox row(s) dispatched: %w", len(ids), err)
	}
	affected, err := result.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlmq: count the outbox rows marked dispatched: %w", err)
	}
	return affected, nil
}

const maxErrorText = 4000

// truncate keeps an error text within the last_error column.
func truncate(cause string) string {
	if len(cause) > maxErrorText {
		return cause[:maxErrorText]
	}
	return cause
}

// recordFailure stores a failed publish of a row: its attempts and last
// error, and either its retirement (retired not zero) or, when retryAt is not
// zero, the end of its lease with no owner, so that any instance's sweep takes
// it again from then on.
func (s *store) recordFailure(ctx context.Context, id int64, attempts int, cause string, retired, retryAt time.Time) error {
	cause = truncate(cause)
	var retiredAt, until sql.NullInt64
	if !retired.IsZero() {
		retiredAt = sql.NullInt64{Int64: micros(retired), Valid: true}
	}
	if !retryAt.IsZero() {
		until = sql.NullInt64{Int64: micros(retryAt), Valid: true}
	}
	_, err := s.db.ExecContext(ctx, s.q("UPDATE {t} SET publish_attempts = ?, last_error = ?, retired_us = ?, lease_owner = NULL, lease_until_us = ? WHERE id = ? AND dispatched_us IS NULL"),
		int64(attempts), cause, retiredAt, until, id)
	if err != nil {
		return fmt.Errorf("sqlmq: record the failed publish of outbox row %d: %w", id, err)
	}
	return nil
}

// stored returns the rows of rows the table holds as written (their id with
// their message id), in order: those a transaction the outbox did not end
// committed. An id that holds another message (SQLite reuses the ids of a
// transaction rolled back) is not the row.
func (s *store) stored(ctx context.Context, rows []row) ([]row, error) {
	result, err := s.db.QueryContext(ctx, s.q("SELECT id, message_id FROM {t} WHERE id IN ("+sqldialect.Placeholders(len(rows))+")"), int64s(rowIDs(rows))...)
	if err != nil {
		return nil, fmt.Errorf("sqlmq: read back %d outbox row(s): %w", len(rows), err)
	}
	defer func() { _ = result.Close() }()
	found := map[int64]string{}
	for result.Next() {
		var id int64
		var messageID string
		if err := result.Scan(&id, &messageID); err != nil {
			return nil, fmt.Errorf("sqlmq: read back an outbox row: %w", err)
		}
		found[id] = messageID
	}
	if err := result.Err(); err != nil {
		return nil, fmt.Errorf("sqlmq: read back %d outbox row(s): %w", len(rows), err)
	}
	var kept []row
	for _, r := range rows {
		if messageID, ok := found[r.id]; ok && messageID == r.dispatch.MessageID {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// nextDue is the earliest time a row set aside after a failed publish may be
// tried again (its lease end, with no owner), or zero when no row waits so.
func (s *store) nextDue(ctx context.Context) (time.Time, error) {
	var due sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.q("SELECT MIN(lease_until_us) FROM {t} WHERE "+pendingCondition+" AND lease_owner IS NULL AND lease_until_us IS NOT NULL")).Scan(&due)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlmq: find the next outbox row due: %w", err)
	}
	return fromMicros(due.Int64), nil
}

// countPending counts rows waiting to be published (not dispatched, not retired).
func (s *store) countPending(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, s.q("SELECT COUNT(*) FROM {t} WHERE "+pendingCondition)).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlmq: count undispatched outbox rows in %s (does the table exist? see sqlmq.CreateSchema): %w", s.table, err)
	}
	return n, nil
}

// prune deletes up to limit rows dispatched before cutoff and returns how many.
func (s *store) prune(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	ids, err := s.queryIDs(ctx, s.db, "SELECT id FROM {t} WHERE dispatched_us IS NOT NULL AND dispatched_us < ? ORDER BY dispatched_us LIMIT ?", micros(cutoff), limit)
	if err != nil {
		return 0, fmt.Errorf("sqlmq: find dispatched outbox rows to prune: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	result, err := s.db.ExecContext(ctx, s.q("DELETE FROM {t} WHERE id IN ("+sqldialect.Placeholders(len(ids))+") AND dispatched_us IS NOT NULL"), int64s(ids)...)
	if err != nil {
		return 0, fmt.Errorf("sqlmq: prune %d dispatched outbox row(s): %w", len(ids), err)
	}
	affected, _ := result.RowsAffected()
	return int(affected), nil
}

func int64s(ids []int64) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
