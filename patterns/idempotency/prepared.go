package idempotency

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sync"
)

// maxPrepared bounds the statements a store keeps prepared: one per batch
// size and kind (a claim, a claim in a transaction, a confirmation).
const maxPrepared = 64

// prepared holds a MySQL store's statements prepared on its own *sql.DB,
// shared by every copy of the store (InTransaction's, one per batch).
// go-sql-driver/mysql (without interpolateParams) prepares, runs and closes
// every statement that has arguments: two round trips. database/sql
// prepares a *sql.Stmt once per pooled connection and keeps it, so a
// statement kept here costs one.
type prepared struct {
	db      *sql.DB
	mu      sync.Mutex
	byQuery map[string]*sql.Stmt
	closed  bool
}

// statement returns query prepared on the store's handle, or nil when it
// is not kept (the store closed, the bound reached, a failed prepare). In a
// transaction it prepares only when the pool can lend a connection without
// waiting: the transaction holds one, and a pool at its limit would make the
// prepare wait for the transaction that waits for it.
func (p *prepared) statement(ctx context.Context, query string, inTx bool) *sql.Stmt {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	kept, full, closed := p.byQuery[query], len(p.byQuery) >= maxPrepared, p.closed
	p.mu.Unlock()
	if kept != nil || full || closed {
		return kept
	}
	if inTx {
		stats := p.db.Stats()
		if stats.Idle == 0 && stats.MaxOpenConnections > 0 && stats.OpenConnections >= stats.MaxOpenConnections {
			return nil
		}
	}
	fresh, err := p.db.PrepareContext(ctx, query)
	if err != nil {
		return nil // run unprepared; the next call tries again
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if kept = p.byQuery[query]; kept != nil || p.closed || len(p.byQuery) >= maxPrepared {
		_ = fresh.Close()
		return kept
	}
	p.byQuery[query] = fresh
	return fresh
}

// close releases the statements; later statements run unprepared.
func (p *prepared) close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var failed error
	for query, statement := range p.byQuery {
		failed = errors.Join(failed, statement.Close())
		delete(p.byQuery, query)
	}
	if failed != nil {
		return fmt.Errorf("idempotency: close the prepared statements: %w", failed)
	}
	return nil
}

// Close releases the statements the store keeps prepared on its database
// handle (MySQL). The store still works after it, preparing each statement
// again every time. Closing the *sql.DB releases them too.
func (s *SQLStore) Close() error { return s.prepared.close() }

// run executes query with args, through the kept prepared statement when
// the store's handle is its own *sql.DB or a transaction of it.
func (s *SQLStore) run(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s.prepared != nil {
		switch db := s.db.(type) {
		case *sql.DB:
			if db == s.prepared.db {
				if statement := s.prepared.statement(ctx, query, false); statement != nil {
					return statement.ExecContext(ctx, args...)
				}
			}
		case *sql.Tx:
			if s.ownTx {
				if statement := s.prepared.statement(ctx, query, true); statement != nil {
					bound := db.StmtContext(ctx, statement)
					defer func() { _ = bound.Close() }()
					return bound.ExecContext(ctx, args...)
				}
			}
		}
	}
	return s.db.ExecContext(ctx, query, args...)
}

// opens reports whether tx is a transaction of db, read by reflection as
// reportsFoundRows reads a handle: a statement prepared on db can serve tx
// only then.
func opens(db *sql.DB, tx *sql.Tx) bool {
	parent := field(follow(reflect.ValueOf(tx)), "db")
	return db != nil && parent.IsValid() && parent.Kind() == reflect.Pointer && parent.Pointer() == reflect.ValueOf(db).Pointer()
}
