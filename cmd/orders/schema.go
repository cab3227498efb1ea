package main

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/warrenmq/messaging/patterns/idempotency"
	"github.com/warrenmq/messaging/sqldialect"
	"github.com/warrenmq/messaging/sqlmq"
)

// The example owns its tables and creates them on first start. The library
// itself never runs DDL: sqlmq.Schema only returns it, for your migrations.
var appTables = []string{
	`CREATE TABLE IF NOT EXISTS orders (
		id         varchar(36)  NOT NULL PRIMARY KEY,
		item       varchar(255) NOT NULL,
		quantity   int          NOT NULL,
		status     varchar(16)  NOT NULL,
		placed_at  datetime(3)  NOT NULL,
		shipped_at datetime(3)      NULL
	) DEFAULT CHARACTER SET utf8mb4`,
	// One row per Idempotency-Key, written in the order's own transaction; the
	// primary key makes a concurrent retry wait, then find the first order.
	// Keys are kept with their orders; delete old ones on your own schedule.
	`CREATE TABLE IF NOT EXISTS order_requests (
		idempotency_key varchar(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
		order_id        varchar(36)  NOT NULL,
		created_at      datetime(3)  NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS order_events (
		order_id    varchar(36) NOT NULL,
		event       varchar(32) NOT NULL,
		recorded_at datetime(3) NOT NULL,
		PRIMARY KEY (order_id, event)
	)`,
}

func createTables(ctx context.Context, db *sql.DB) error {
	for _, ddl := range appTables {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("create the example's tables: %w (does the user in -dsn have CREATE rights on the database?)", err)
		}
	}
	// The shipper's idempotency claims (acemq_idempotency, the AceMQ name, so
	// services in other languages can share it).
	claims, err := idempotency.NewSQLStore(db, sqldialect.MySQL)
	if err != nil {
		return err
	}
	if err := claims.CreateTable(ctx); err != nil { // adds what an older table lacks
		return fmt.Errorf("create the idempotency table: %w", err)
	}
	var present int
	err = db.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'Messages'").Scan(&present)
	if err != nil {
		return fmt.Errorf("look for the outbox table: %w", err)
	}
	if present > 0 {
		return nil
	}
	for _, statement := range sqlmq.Statements(sqlmq.Schema(sqldialect.MySQL)) {
		if _, err := db.ExecContext(ctx, statement); err != nil {
			return fmt.Errorf("create the outbox table: %w", err)
		}
	}
	return nil
}
