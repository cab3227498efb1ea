package streams

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/sqldialect"
)

// DefaultCheckpointTable is the checkpoint table's name.
const DefaultCheckpointTable = "stream_checkpoints"

// CheckpointDB is what Checkpoints needs of a database, sqldialect.DB:
// *sql.DB, *sql.Conn and *sql.Tx all have it.
type CheckpointDB = sqldialect.DB

// Checkpoints keeps each reader's next offset in a SQL table (MySQL/MariaDB,
// PostgreSQL or SQLite), one row per reader name: the position a projection
// saves in the transaction that applies what it read, so a restart starts one
// past what was applied, with no gap and no repeat. Nothing in Read uses it
// by itself: call From before Read and Save in your handler. It is safe for
// concurrent use when its database is.
type Checkpoints struct {
	db      CheckpointDB
	dialect sqldialect.Dialect
	table   string

	load, save string
}

// CheckpointOptions is the entry point for configuring NewCheckpoints:
// streams.CheckpointOptions.Table(...).
var CheckpointOptions CheckpointOptionSet

// CheckpointOptionSet holds the options of NewCheckpoints; each method
// returns a CheckpointOption. (Exported so go doc lists them.)
type CheckpointOptionSet struct{}

// CheckpointOption configures NewCheckpoints.
type CheckpointOption func(*checkpointConfig)

type checkpointConfig struct {
	table string
}

// Table names the checkpoint table (default DefaultCheckpointTable,
// "stream_checkpoints"): a plain identifier, optionally schema.table.
func (CheckpointOptionSet) Table(name string) CheckpointOption {
	return func(c *checkpointConfig) { c.table = name }
}

// NewCheckpoints returns the checkpoints kept in db, in dialect. It creates
// nothing: apply Schema with your migrations, or call CreateTable. The error
// is a table name that is not a plain identifier.
func NewCheckpoints(db CheckpointDB, dialect sqldialect.Dialect, opts ...CheckpointOption) (*Checkpoints, error) {
	c := checkpointConfig{table: DefaultCheckpointTable}
	options.Apply(&c, opts)
	if err := sqldialect.CheckTable("streams", c.table); err != nil {
		return nil, err
	}
	upsert := " ON CONFLICT (name) DO UPDATE SET next_offset = excluded.next_offset"
	if dialect.IsMySQL() {
		upsert = " ON DUPLICATE KEY UPDATE next_offset = VALUES(next_offset)"
	}
	return &Checkpoints{
		db: db, dialect: dialect, table: c.table,
		load: dialect.Rebind("SELECT next_offset FROM " + c.table + " WHERE name = ?"),
		save: dialect.Rebind("INSERT INTO " + c.table + " (name, next_offset) VALUES (?, ?)" + upsert),
	}, nil
}

// Schema returns the DDL of the checkpoint table, an idempotent CREATE TABLE
// IF NOT EXISTS ending in a semicolon, for a migration tool (goose,
// golang-migrate, atlas); CreateTable runs it.
func (c *Checkpoints) Schema() string { return sqldialect.Script(c.create()) }

func (c *Checkpoints) create() string {
	return "CREATE TABLE IF NOT EXISTS " + c.table + " (\n" +
		"    name VARCHAR(255) NOT NULL PRIMARY KEY,\n" +
		"    next_offset BIGINT NOT NULL\n" +
		")"
}

// CreateTable creates the checkpoint table unless it is there. It is safe to
// call on every start.
func (c *Checkpoints) CreateTable(ctx context.Context) error {
	if _, err := c.db.ExecContext(ctx, c.create()); err != nil {
		return fmt.Errorf("streams: create %s: %w", c.table, err)
	}
	return nil
}

// From returns where the reader name starts: FromOffset of its saved next
// offset, or first when nothing was saved (FromFirst for a projection that
// must see the whole history).
func (c *Checkpoints) From(ctx context.Context, name string, first Offset) (Offset, error) {
	var next int64
	switch err := c.db.QueryRowContext(ctx, c.load, name).Scan(&next); {
	case errors.Is(err, sql.ErrNoRows):
		return first, nil
	case err != nil:
		return Offset{}, fmt.Errorf("streams: read the checkpoint of %q from %s: %w", name, c.table, err)
	case next < 0:
		return Offset{}, fmt.Errorf("streams: the checkpoint of %q in %s is %d, which is no offset", name, c.table, next)
	}
	return FromOffset(uint64(next)), nil
}

// Save records next as the reader name's next offset (the offset handled plus
// one), through tx: the transaction the handler applies the message in, so
// the two commit together. A nil tx writes through the Checkpoints' own db.
func (c *Checkpoints) Save(ctx context.Context, tx CheckpointDB, name string, next uint64) error {
	if tx == nil {
		tx = c.db
	}
	if next > math.MaxInt64 {
		return fmt.Errorf("streams: offset %d does not fit the checkpoint table's BIGINT", next)
	}
	if _, err := tx.ExecContext(ctx, c.save, name, int64(next)); err != nil {
		return fmt.Errorf("streams: save the checkpoint of %q in %s: %w", name, c.table, err)
	}
	return nil
}
