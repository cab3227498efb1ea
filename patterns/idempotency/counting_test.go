package idempotency

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/warrenmq/messaging/internal/testenv"
)

// statements counts the statements sent to a database that name a table,
// whatever path database/sql takes to send them (a direct Exec or Query, or
// a prepared statement), through a driver that wraps the real one.
type statements struct {
	mu    sync.Mutex
	table string
	sent  []string
}

func (s *statements) saw(query string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table != "" && strings.Contains(query, s.table) {
		s.sent = append(s.sent, query)
	}
}

// count returns how many statements named the table since the last count,
// and what they were (for a failure's message).
func (s *statements) count() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sent := s.sent
	s.sent = nil
	return len(sent), sent
}

// openCounting opens b's database through the counting driver, with b's
// test lock held.
func openCounting(t *testing.T, b backend) (*sql.DB, *statements) {
	t.Helper()
	var name, dsn string
	switch {
	case b.dialect.IsMySQL():
		testenv.MySQL(t)
		name, dsn = "mysql", testenv.MySQLDSN
	case b.dialect.IsPostgreSQL():
		testenv.Postgres(t)
		name, dsn = "pgx", testenv.PostgresDSN
	default:
		name, dsn = "sqlite", "file:"+filepath.Join(t.TempDir(), "counted.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"
	}
	plain, err := sql.Open(name, dsn)
	if err != nil {
		t.Fatal(err)
	}
	real := plain.Driver()
	_ = plain.Close()
	counter := &statements{}
	db := sql.OpenDB(countingConnector{driver: real, dsn: dsn, statements: counter})
	t.Cleanup(func() { _ = db.Close() })
	return db, counter
}

type countingConnector struct {
	driver     driver.Driver
	dsn        string
	statements *statements
}

func (k countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	var err error
	if opener, ok := k.driver.(driver.DriverContext); ok {
		var connector driver.Connector
		if connector, err = opener.OpenConnector(k.dsn); err == nil {
			conn, err = connector.Connect(ctx)
		}
	} else {
		conn, err = k.driver.Open(k.dsn)
	}
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, statements: k.statements}, nil
}

func (k countingConnector) Driver() driver.Driver { return k.driver }

// countingConn passes everything to the real connection and counts what it
// sends.
type countingConn struct {
	driver.Conn
	statements *statements
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	execer, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	result, err := execer.ExecContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.statements.saw(query)
	}
	return result, err
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	queryer, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := queryer.QueryContext(ctx, query, args)
	if err != driver.ErrSkip {
		c.statements.saw(query)
	}
	return rows, err
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var stmt driver.Stmt
	var err error
	if preparer, ok := c.Conn.(driver.ConnPrepareContext); ok {
		stmt, err = preparer.PrepareContext(ctx, query)
	} else {
		stmt, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &countingStmt{Stmt: stmt, query: query, statements: c.statements}, nil
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *countingConn) BeginTx(ctx context.Context, options driver.TxOptions) (driver.Tx, error) {
	if beginner, ok := c.Conn.(driver.ConnBeginTx); ok {
		return beginner.BeginTx(ctx, options)
	}
	return c.Conn.Begin() //nolint:staticcheck // the driver has nothing newer
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if resetter, ok := c.Conn.(driver.SessionResetter); ok {
		return resetter.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if validator, ok := c.Conn.(driver.Validator); ok {
		return validator.IsValid()
	}
	return true
}

func (c *countingConn) CheckNamedValue(value *driver.NamedValue) error {
	if checker, ok := c.Conn.(driver.NamedValueChecker); ok {
		return checker.CheckNamedValue(value)
	}
	return driver.ErrSkip
}

// countingStmt counts each execution of a prepared statement.
type countingStmt struct {
	driver.Stmt
	query      string
	statements *statements
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.statements.saw(s.query)
	if execer, ok := s.Stmt.(driver.StmtExecContext); ok {
		return execer.ExecContext(ctx, args)
	}
	return s.Stmt.Exec(values(args)) //nolint:staticcheck // the driver has nothing newer
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.statements.saw(s.query)
	if queryer, ok := s.Stmt.(driver.StmtQueryContext); ok {
		return queryer.QueryContext(ctx, args)
	}
	return s.Stmt.Query(values(args)) //nolint:staticcheck // the driver has nothing newer
}

func values(args []driver.NamedValue) []driver.Value {
	plain := make([]driver.Value, len(args))
	for i, arg := range args {
		plain[i] = arg.Value
	}
	return plain
}
