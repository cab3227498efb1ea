package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/sqldialect"
)

// A commit stores its rows with as few INSERT statements as the dialect
// allows: one multi-row INSERT per chunk of rows, each chunk bounded by the
// rows and the bytes below, so that no statement runs into a database's limit
// on bound values or on the size of one packet.
const (
	// maxRowsPerInsert bounds one INSERT on MySQL and PostgreSQL: 500 rows of
	// 26 values stay well within both databases' 65,535 bound values.
	maxRowsPerInsert = 500
	// maxBytesPerInsert bounds the payload and text of one multi-row INSERT;
	// a row larger than this is inserted alone, as before.
	maxBytesPerInsert = 1 << 20
	// maxInsertShapes bounds the prepared INSERT statements kept, one per
	// number of rows: a service commits a few sizes again and again, and a
	// size past the bound is prepared in its transaction instead.
	maxInsertShapes = 16
)

// sqliteRowsPerInsert keeps one INSERT within 999 bound values, the limit of
// SQLite builds before 3.32, so every driver takes it.
var sqliteRowsPerInsert = 999 / (columnCount + 2)

// insertQuery is the statement that stores n dispatches. Where the database
// can say which ids it gave the rows it inserts (PostgreSQL, SQLite), the
// statement returns them; on MySQL they follow from LAST_INSERT_ID().
func (s *store) insertQuery(n int) string {
	values := "(" + sqldialect.Placeholders(columnCount+2) + ")"
	query := "INSERT INTO {t} (" + columns + ", lease_owner, lease_until_us) VALUES " +
		strings.Repeat(values+",", n-1) + values
	if !s.dialect.IsMySQL() {
		query += " RETURNING id"
	}
	return s.q(query)
}

// rowsPerInsert is the most rows one INSERT may carry in this dialect. On
// MySQL it is one until the id step is known.
func (s *store) rowsPerInsert() int {
	switch {
	case s.dialect.IsSQLite():
		return sqliteRowsPerInsert
	case s.dialect.IsMySQL():
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.step <= 0 {
			return 1
		}
	}
	return maxRowsPerInsert
}

// prepareInsert prepares the one-row insert on the database handle once, and
// on MySQL reads the id step. It runs before the committing transaction
// begins, never inside it: preparing on the handle takes a pooled connection,
// and a pool of one (usual for SQLite) would wait for the transaction's own. A
// failure is not cached; the insert then prepares in its transaction and
// reports the cause.
//
// The prepare runs without the store's lock: it may wait for a pooled
// connection, and a writer holding one must still be able to insert.
func (s *store) prepareInsert(ctx context.Context) {
	s.readStep(ctx, s.db)
	if s.preparedInsert() != nil {
		return
	}
	s.learn(ctx, []int{1})
}

// readStep reads MySQL's auto_increment_increment once. The ids one
// multi-row INSERT gives its rows are consecutive steps from LAST_INSERT_ID()
// (InnoDB reserves a simple insert's ids at once, in every
// innodb_autoinc_lock_mode); a cluster that sets another step for each of its
// members (Galera) is read here too.
func (s *store) readStep(ctx context.Context, db rowQuerier) {
	if !s.dialect.IsMySQL() {
		return
	}
	s.mu.Lock()
	known := s.step > 0 || s.closed
	s.mu.Unlock()
	if known {
		return
	}
	var step int64
	if err := db.QueryRowContext(ctx, "SELECT @@auto_increment_increment").Scan(&step); err != nil || step <= 0 {
		return // rows are inserted one per statement until it is known
	}
	s.mu.Lock()
	s.step = step
	s.mu.Unlock()
}

// learn prepares, on the database handle, the inserts of the given sizes
// that are not prepared yet, while fewer than maxInsertShapes are. It runs
// outside any transaction (see prepareInsert); a failure leaves the size to
// be prepared in its transaction.
func (s *store) learn(ctx context.Context, sizes []int) {
	for _, n := range sizes {
		s.mu.Lock()
		_, known := s.inserts[n]
		full := len(s.inserts) >= maxInsertShapes
		closed := s.closed
		s.mu.Unlock()
		if known || full || closed {
			continue
		}
		statement, err := s.db.PrepareContext(ctx, s.insertQuery(n))
		if err != nil {
			return
		}
		s.mu.Lock()
		keep := s.inserts[n] == nil && !s.closed && len(s.inserts) < maxInsertShapes
		if keep {
			s.inserts[n] = statement
		}
		s.mu.Unlock()
		if !keep { // another writer won the race, or the store closed
			_ = statement.Close()
		}
	}
}

// preparedInsert returns the shared one-row insert, or nil when it is not
// prepared (yet, or any more).
func (s *store) preparedInsert() *sql.Stmt {
	return s.prepared(1)
}

func (s *store) prepared(n int) *sql.Stmt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inserts[n]
}

// close releases the shared insert statements; later inserts prepare in
// their own transaction.
func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var failed error
	for n, statement := range s.inserts {
		if err := statement.Close(); err != nil && failed == nil {
			failed = fmt.Errorf("sqlmq: close the prepared outbox insert: %w", err)
		}
		delete(s.inserts, n)
	}
	return failed
}

// rowQuerier is a *sql.DB or a *sql.Tx, for a query of one row.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// execer is what an insert needs from a *sql.Tx.
type execer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	StmtContext(ctx context.Context, statement *sql.Stmt) *sql.Stmt
}

// insert stores normalized dispatches in tx, leased to owner until leaseUntil,
// and returns their row ids in order, with as few statements as the dialect
// allows (one per chunk; see maxRowsPerInsert). When shared (tx is on the
// outbox's own handle) it uses the shared prepared statement of a chunk's
// size when there is one (database/sql prepares it once per pooled
// connection), and prepares in tx otherwise: those sizes are returned in
// unprepared, for learn once the transaction is over.
func (s *store) insert(ctx context.Context, tx execer, shared bool, dispatches []messaging.Dispatch, created time.Time, owner string, leaseUntil time.Time) (ids []int64, unprepared []int, err error) {
	ids = make([]int64, 0, len(dispatches))
	limit := s.rowsPerInsert()
	lease := micros(leaseUntil)
	var args []any
	for start := 0; start < len(dispatches); {
		args = args[:0]
		size, end := 0, start
		for end < len(dispatches) && end-start < limit {
			values, err := values(dispatches[end], created)
			if err != nil {
				return nil, nil, err
			}
			weight := bytesOf(values)
			if end > start && size+weight > maxBytesPerInsert {
				break
			}
			size += weight
			args = append(append(args, values...), owner, lease)
			end++
		}
		chunk, prepared, err := s.insertChunk(ctx, tx, shared, end-start, args)
		if err != nil {
			if end-start == 1 {
				return nil, nil, fmt.Errorf("sqlmq: insert message %s into the outbox table %s: %w", dispatches[start].MessageID, s.table, err)
			}
			return nil, nil, fmt.Errorf("sqlmq: insert messages %d to %d of %d (%s first) into the outbox table %s: %w",
				start+1, end, len(dispatches), dispatches[start].MessageID, s.table, err)
		}
		if !prepared && !slices.Contains(unprepared, end-start) {
			unprepared = append(unprepared, end-start)
		}
		ids = append(ids, chunk...)
		start = end
	}
	return ids, unprepared, nil
}

// insertChunk runs one INSERT of n rows and returns their ids in the order of
// the rows, and whether a shared prepared statement served it (only when
// useShared: tx is on the handle the statement was prepared on).
func (s *store) insertChunk(ctx context.Context, tx execer, useShared bool, n int, args []any) ([]int64, bool, error) {
	var statement *sql.Stmt
	var shared *sql.Stmt
	if useShared {
		shared = s.prepared(n)
	}
	if shared != nil {
		statement = tx.StmtContext(ctx, shared)
	} else {
		var err error
		if statement, err = tx.PrepareContext(ctx, s.insertQuery(n)); err != nil {
			return nil, false, fmt.Errorf("prepare the insert (does the table exist? see sqlmq.CreateSchema): %w", err)
		}
	}
	defer func() { _ = statement.Close() }()
	ids := make([]int64, 0, n)
	if s.dialect.IsMySQL() {
		result, err := statement.ExecContext(ctx, args...)
		if err != nil {
			return nil, false, err
		}
		first, err := result.LastInsertId()
		if err != nil {
			return nil, false, err
		}
		if n > 1 {
			affected, err := result.RowsAffected()
			if err != nil || affected != int64(n) {
				return nil, false, fmt.Errorf("the database reports %d row(s) inserted of %d (%v); the transaction is not committed", affected, n, err)
			}
		}
		s.mu.Lock()
		step := s.step
		s.mu.Unlock()
		for i := range n {
			ids = append(ids, first+int64(i)*step)
		}
		return ids, shared != nil, nil
	}
	result, err := statement.QueryContext(ctx, args...)
	if err != nil {
		return nil, false, err
	}
	defer func() { _ = result.Close() }()
	for result.Next() {
		var id int64
		if err := result.Scan(&id); err != nil {
			return nil, false, err
		}
		ids = append(ids, id)
	}
	if err := result.Err(); err != nil {
		return nil, false, err
	}
	if len(ids) != n {
		return nil, false, fmt.Errorf("the database returned %d id(s) for %d inserted row(s); the transaction is not committed", len(ids), n)
	}
	// One statement numbers its rows in the order of its VALUES, though it
	// may return them in another.
	slices.Sort(ids)
	return ids, shared != nil, nil
}

// bytesOf is the size of a row's text and binary values, to keep one
// multi-row INSERT within maxBytesPerInsert.
func bytesOf(values []any) int {
	n := 0
	for _, v := range values {
		switch v := v.(type) {
		case string:
			n += len(v)
		case []byte:
			n += len(v)
		case sql.NullString:
			n += len(v.String)
		default:
			n += 8
		}
	}
	return n
}
