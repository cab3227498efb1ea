package examples_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// quiet is the logger the examples pass to every package, so that the INFO
// lines a real service wants (startup recovery, stream opened) do not clutter
// the examples' output.
var quiet = slog.New(slog.DiscardHandler)

// openSQLite opens a fresh SQLite database in a new temporary directory,
// creates the outbox table and an orders table, and returns the database and a
// function that closes it and removes the directory.
func openSQLite() (*sql.DB, func(), error) {
	dir, err := os.MkdirTemp("", "warrenmq-example-")
	if err != nil {
		return nil, nil, err
	}
	// SQLite has one write lock: let writers and the dispatch processor wait
	// for it instead of failing with SQLITE_BUSY.
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	cleanup := func() {
		_ = db.Close()
		_ = os.RemoveAll(dir)
	}
	ctx := context.Background()
	// The library never runs DDL: a service applies sqlmq.Schema with its own
	// migrations. Here it runs one statement at a time.
	statements := append(sqlmq.Statements(sqlmq.Schema(sqldialect.SQLite)),
		"CREATE TABLE orders (id TEXT PRIMARY KEY, item TEXT NOT NULL, status TEXT NOT NULL)",
		"CREATE TABLE shipments (order_id TEXT PRIMARY KEY)",
	)
	for _, statement := range statements {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("create tables: %w", err)
		}
	}
	return db, cleanup, nil
}

// await waits for one value on c, bounded: an example never hangs.
func await[T any](c <-chan T, what string) (T, error) {
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case value := <-c:
		return value, nil
	case <-timer.C:
		var zero T
		return zero, fmt.Errorf("timed out waiting for %s", what)
	}
}
