package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/warrenmq/messaging/sqldialect"
)

// Admin is the operator's view of an outbox table: the rows waiting to be
// published and why, the rows retired, and the means to put them back.
type Admin struct {
	store *store
	err   error
}

// OutboxRow is what every listing of the outbox shows of a row: its ids,
// where it goes, when it was written, and how its publishes failed.
type OutboxRow struct {
	ID          int64
	MessageID   string
	Topic       string
	RoutingKey  string
	MessageType string
	Created     time.Time
	// Attempts counts the publishes that failed on the row's own account.
	Attempts int
	// LastError is the last failed publish's error (empty when none failed).
	LastError string
}

// listedColumns are OutboxRow's columns, in the order scanListed reads them.
const listedColumns = "id, message_id, topic, routing_key, message_type, created_us, publish_attempts, last_error"

// scanListed reads listedColumns into r and the listing's own columns, which
// follow them, into more.
func scanListed(s scanner, r *OutboxRow, more ...any) error {
	var (
		created, attempts int64
		lastError         sql.NullString
	)
	if err := s.Scan(append([]any{&r.ID, &r.MessageID, &r.Topic, &r.RoutingKey, &r.MessageType, &created, &attempts, &lastError}, more...)...); err != nil {
		return err
	}
	r.Created, r.Attempts, r.LastError = fromMicros(created), int(attempts), lastError.String
	return nil
}

// RetiredMessage is a row retired when its retry policy gave up, or at
// once because it can never be published (a wire limit). It is kept, not
// deleted, until an operator releases it.
type RetiredMessage struct {
	OutboxRow
	Retired time.Time
}

// NewAdmin returns an Admin over the outbox table in db. It honours the Dialect
// and Table options; the others are ignored.
func NewAdmin(db *sql.DB, options ...Option) *Admin {
	config := newConfig(append([]Option{Options.StorageHandle(db)}, options...))
	return &Admin{store: newStore(config.db, config.dialect, config.table), err: config.err}
}

// Retired lists up to limit retired rows, oldest first (limit <= 0 means 100).
func (a *Admin) Retired(ctx context.Context, limit int) ([]RetiredMessage, error) {
	return listRows(ctx, a, limit, "retired", "SELECT "+listedColumns+", retired_us FROM {t} "+
		"WHERE dispatched_us IS NULL AND retired_us IS NOT NULL ORDER BY id LIMIT ?", scanRetired)
}

// scanRetired reads a row of Retired's query.
func scanRetired(s scanner) (RetiredMessage, error) {
	var (
		m       RetiredMessage
		retired int64
	)
	err := scanListed(s, &m.OutboxRow, &retired)
	m.Retired = fromMicros(retired)
	return m, err
}

// Release puts retired rows back to be published: attempts go back to zero and
// no instance holds them, so the next sweep of any running processor (within
// its SweepInterval) publishes them. It returns how many rows it released.
func (a *Admin) Release(ctx context.Context, ids ...int64) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	s := a.store
	result, err := s.db.ExecContext(ctx, s.q("UPDATE {t} SET retired_us = NULL, publish_attempts = 0, lease_owner = NULL, lease_until_us = NULL "+
		"WHERE id IN ("+sqldialect.Placeholders(len(ids))+") AND retired_us IS NOT NULL AND dispatched_us IS NULL"), int64s(ids)...)
	if err != nil {
		return 0, fmt.Errorf("sqlmq: release %d retired outbox row(s): %w", len(ids), err)
	}
	affected, err := result.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlmq: count released outbox rows: %w", err)
	}
	return int(affected), nil
}

// PendingMessage is a row waiting to be published: its age, how many of its
// publishes failed on its own account, and the last error, so an operator can
// see why the outbox is behind.
type PendingMessage struct {
	OutboxRow
	// LeaseOwner is the processor holding the row, empty when none does (a
	// row set aside after a failure, or released at shutdown).
	LeaseOwner string
	// LeaseUntil is when the holder's claim ends, or when a row set aside is
	// tried again; zero when never leased.
	LeaseUntil time.Time
}

// Pending lists up to limit rows waiting to be published, oldest first (limit
// <= 0 means 100).
func (a *Admin) Pending(ctx context.Context, limit int) ([]PendingMessage, error) {
	return listRows(ctx, a, limit, "pending", "SELECT "+listedColumns+", lease_owner, lease_until_us FROM {t} "+
		"WHERE "+pendingCondition+" ORDER BY id LIMIT ?", scanPending)
}

// scanPending reads a row of Pending's query.
func scanPending(s scanner) (PendingMessage, error) {
	var (
		m     PendingMessage
		owner sql.NullString
		until sql.NullInt64
	)
	err := scanListed(s, &m.OutboxRow, &owner, &until)
	m.LeaseOwner, m.LeaseUntil = owner.String, fromMicros(until.Int64)
	return m, err
}

// listRows runs query, whose one argument is the limit (limit <= 0 means 100),
// and reads each row it returns with scan; what names the rows in an error.
func listRows[T any](ctx context.Context, a *Admin, limit int, what, query string, scan func(scanner) (T, error)) ([]T, error) {
	if a.err != nil {
		return nil, a.err
	}
	if limit <= 0 {
		limit = 100
	}
	s := a.store
	result, err := s.db.QueryContext(ctx, s.q(query), limit)
	if err != nil {
		return nil, fmt.Errorf("sqlmq: list %s outbox rows in %s (does the table exist? see sqlmq.CreateSchema): %w", what, s.table, err)
	}
	defer func() { _ = result.Close() }()
	var listed []T
	for result.Next() {
		m, err := scan(result)
		if err != nil {
			return nil, fmt.Errorf("sqlmq: read a %s outbox row: %w", what, err)
		}
		listed = append(listed, m)
	}
	if err := result.Err(); err != nil {
		return nil, fmt.Errorf("sqlmq: list %s outbox rows in %s: %w", what, s.table, err)
	}
	return listed, nil
}

// Undispatched counts rows waiting to be published (retired rows excluded).
func (a *Admin) Undispatched(ctx context.Context) (int64, error) {
	if a.err != nil {
		return 0, a.err
	}
	return a.store.countPending(ctx)
}
