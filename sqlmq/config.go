package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/sqldialect"
)

// Default values of the options. A zero or negative duration or capacity given to
// an option means its default, never "no limit".
const (
	DefaultTable                 = "Messages"
	DefaultChannelBufferCapacity = 1024
	DefaultRetryTimeout          = 5 * time.Second
	DefaultIsolationLevel        = sql.LevelReadCommitted
	DefaultMaxAttempts           = 10
	DefaultPageSize              = 500
	DefaultLinger                = 10 * time.Millisecond
	DefaultLeaseTimeout          = time.Minute
	DefaultRetention             = 24 * time.Hour
	DefaultPruneBatchSize        = 500
	DefaultPruneInterval         = time.Minute
	DefaultShutdownTimeout       = 30 * time.Second
	// DefaultMaxPayload is RabbitMQ's default max_message_size (128 MiB).
	DefaultMaxPayload = wire.DefaultMaxPayload
)

type configuration struct {
	db         *sql.DB
	ownsDB     bool
	err        error
	dialect    sqldialect.Dialect
	table      string
	channelCap int
	retry      time.Duration
	isolation  sql.IsolationLevel
	maxPayload int
	maxAttempt int
	pageSize   int
	linger     time.Duration
	lease      time.Duration
	sweep      time.Duration
	retention  time.Duration
	pruneBatch int
	pruneEvery time.Duration
	shutdown   time.Duration
	logger     *slog.Logger
	monitor    Monitor
	ctx        context.Context
	clock      Clock
	owner      string

	// newPublisher is the seam unit tests use to replace the batch writer over
	// the transport.
	newPublisher func() publisher
	// readAhead, when set, is told the cursor of each page a catch-up pass
	// read ahead, once the read is done (a seam for unit tests).
	readAhead func(after int64)
}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type singleton struct{}

// Options is the namespace of the options New and NewAdmin accept, for example
// sqlmq.Options.StorageHandle(db).
var Options singleton

// StorageHandle is the database holding the outbox table. It (or DataSource) is
// required. The outbox never closes a handle it was given.
func (singleton) StorageHandle(db *sql.DB) option {
	return func(c *configuration) { c.db, c.ownsDB = db, false }
}

// DataSource opens the database with sql.Open(driver, dsn). The dispatch
// processor closes a handle it opened this way when it is closed.
func (singleton) DataSource(driver, dsn string) option {
	return func(c *configuration) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			c.err = fmt.Errorf("sqlmq: open the %q database: %w (is the driver imported?)", driver, err)
			return
		}
		c.db, c.ownsDB = db, true
	}
}

// Dialect chooses the SQL dialect of the database: MySQL (the default, also for
// MariaDB 10.6 and later), PostgreSQL or SQLite.
func (singleton) Dialect(d sqldialect.Dialect) option {
	return func(c *configuration) { c.dialect = d }
}

// Table names the outbox table (default "Messages"). The name must be a plain
// identifier, optionally qualified by a schema (letters, digits, underscores).
func (singleton) Table(name string) option {
	return func(c *configuration) { c.table = name }
}

// ChannelBufferCapacity is the number of committed messages the dispatch
// processor accepts into memory ahead of publishing them (default 1024). When
// it is full, Commit does not wait: the rows are already durable, and the
// processor publishes them from the table once it has caught up.
func (singleton) ChannelBufferCapacity(capacity int) option {
	return func(c *configuration) { c.channelCap = capacity }
}

// RetryTimeout is the wait between publish attempts after an error, and
// before a row whose own publish failed is tried again (default 5s).
func (singleton) RetryTimeout(d time.Duration) option {
	return func(c *configuration) { c.retry = d }
}

// IsolationLevel is the isolation of the transaction a CommitWriter begins
// (default ReadCommitted; SQLite always runs serializable and ignores it).
func (singleton) IsolationLevel(level sql.IsolationLevel) option {
	return func(c *configuration) { c.isolation = level }
}

// MaxPayload is the largest payload Write accepts, in bytes (default
// DefaultMaxPayload, RabbitMQ's default max_message_size). Set it to the
// broker's max_message_size when that is lower, so an over-large message is
// refused by Write with messaging.ErrWireLimit instead of being stored and
// refused by the broker later. On MySQL and MariaDB the server's
// max_allowed_packet must also exceed it (MariaDB's default is 16 MiB), or the
// INSERT of a large row fails and Commit returns that error.
func (singleton) MaxPayload(bytes int) option {
	return func(c *configuration) { c.maxPayload = bytes }
}

// MaxAttempts is how many failed publishes of a row are counted before the row
// is retired: kept, never published again until an operator releases it
// (default 10). A failure is counted when it is the row's own: the broker
// refused that message (unroutable, missing exchange, message too large), or
// it failed alone while other rows published. An outage (broker unreachable,
// publishing paused, every row failing alike) and a nack are never counted. A
// row that can never be published (it breaks an AMQP wire limit, say a row
// written by an older version) is retired at once.
func (singleton) MaxAttempts(attempts int) option {
	return func(c *configuration) { c.maxAttempt = attempts }
}

// PageSize is the most rows read at once by startup recovery and the lease
// sweep, and the largest batch published at once (default 500).
func (singleton) PageSize(size int) option {
	return func(c *configuration) { c.pageSize = size }
}

// Linger bounds how long a busy dispatch processor waits for more committed
// rows before publishing a batch (default 10ms). It lingers only while rows
// keep arriving (each within a millisecond of the last) after rows arrived
// during its previous publish, so a stream of one-message transactions is
// published and marked dispatched in a few large batches instead of many small
// ones that compete with the committing service for the database and the
// broker. An idle processor publishes a lone row at once.
func (singleton) Linger(d time.Duration) option {
	return func(c *configuration) { c.linger = d }
}

// LeaseTimeout is how long a processor's claim on a row lasts without renewal
// (default 1 minute). Another instance may publish a row whose lease expired,
// so keep it well above the time one batch takes to publish (the transport's
// broker timeout). The commit that stores a row leases it to this instance;
// a row handed to the processor with three quarters of that lease still ahead
// is published without renewing it, any other row is renewed first. Instances
// sharing a table need clocks in rough agreement (well within a quarter of
// the lease).
func (singleton) LeaseTimeout(d time.Duration) option {
	return func(c *configuration) { c.lease = d }
}

// SweepInterval is how often the processor looks for rows no live instance
// holds, such as those of an instance that died after committing (default half
// the LeaseTimeout). Such rows are published within their lease plus this
// interval, without a restart.
func (singleton) SweepInterval(d time.Duration) option {
	return func(c *configuration) { c.sweep = d }
}

// Retention is how long dispatched rows are kept before the processor prunes
// them (default 24 hours). Unpublished and retired rows are never pruned.
func (singleton) Retention(d time.Duration) option {
	return func(c *configuration) { c.retention = d }
}

// PruneBatchSize is the most dispatched rows deleted by one statement (default 500).
func (singleton) PruneBatchSize(size int) option {
	return func(c *configuration) { c.pruneBatch = size }
}

// PruneInterval is how often the processor looks for rows past Retention
// (default 1 minute); a full batch is followed at once by another.
func (singleton) PruneInterval(d time.Duration) option {
	return func(c *configuration) { c.pruneEvery = d }
}

// ShutdownTimeout bounds how long Close waits for Listen to return (default
// 30s, the transport's own broker timeout).
func (singleton) ShutdownTimeout(d time.Duration) option {
	return func(c *configuration) { c.shutdown = d }
}

// Logger receives the outbox's WARN and INFO lines (default: slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *configuration) { c.logger = logger }
}

// Monitor receives the outbox's counters (default: a no-op).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *configuration) { c.monitor = monitor }
}

// Context is the process context. The dispatch processor runs on it; ending it
// stops the processor as Close does (default Background).
func (singleton) Context(ctx context.Context) option {
	return func(c *configuration) { c.ctx = ctx }
}

// Clock replaces the wall clock and timers; a test seam.
func (singleton) Clock(clock Clock) option {
	return func(c *configuration) { c.clock = clock }
}

// InstanceName names this processor in the lease_owner column (default
// host/pid/random). Two processors must never share a name.
func (singleton) InstanceName(name string) option {
	return func(c *configuration) { c.owner = name }
}

func newConfiguration(options []option) configuration {
	c := configuration{}
	for _, apply := range options {
		if apply != nil {
			apply(&c)
		}
	}
	c.table = defaultString(c.table, DefaultTable)
	c.channelCap = defaultInt(c.channelCap, DefaultChannelBufferCapacity)
	c.retry = defaultDuration(c.retry, DefaultRetryTimeout)
	if c.isolation == sql.LevelDefault {
		c.isolation = DefaultIsolationLevel
	}
	c.maxPayload = defaultInt(c.maxPayload, DefaultMaxPayload)
	c.maxAttempt = defaultInt(c.maxAttempt, DefaultMaxAttempts)
	c.pageSize = defaultInt(c.pageSize, DefaultPageSize)
	c.linger = defaultDuration(c.linger, DefaultLinger)
	c.lease = defaultDuration(c.lease, DefaultLeaseTimeout)
	c.sweep = defaultDuration(c.sweep, c.lease/2)
	c.retention = defaultDuration(c.retention, DefaultRetention)
	c.pruneBatch = defaultInt(c.pruneBatch, DefaultPruneBatchSize)
	c.pruneEvery = defaultDuration(c.pruneEvery, DefaultPruneInterval)
	c.shutdown = defaultDuration(c.shutdown, DefaultShutdownTimeout)
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if c.clock == nil {
		c.clock = systemClock{}
	}
	if c.owner == "" {
		c.owner = defaultOwner()
	}
	if c.err == nil && c.db == nil {
		c.err = fmt.Errorf("sqlmq: no database; pass sqlmq.Options.StorageHandle(db) or sqlmq.Options.DataSource(driver, dsn)")
	}
	if c.err == nil {
		c.err = sqldialect.CheckTable("sqlmq", c.table)
	}
	return c
}

func defaultString(value, fallback string) string {
	if value == "" {
		return fallback
	}
	return value
}

func defaultInt(value, fallback int) int {
	if value <= 0 {
		return fallback
	}
	return value
}

func defaultDuration(value, fallback time.Duration) time.Duration {
	if value <= 0 {
		return fallback
	}
	return value
}
