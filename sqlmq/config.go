package sqlmq

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/retrypolicy"
	"github.com/warrenmq/messaging/sqldialect"
)

// Default values of the options. A zero or negative duration or capacity given to
// an option means its default, never "no limit".
const (
	DefaultTable                 = "Messages"
	DefaultChannelBufferCapacity = 1024
	DefaultRetryDelay            = 5 * time.Second
	DefaultIsolationLevel        = sql.LevelReadCommitted
	// DefaultMaxAttempts is DefaultRetryPolicy's budget: a row is retired
	// after ten failed publishes of its own.
	DefaultMaxAttempts     = 10
	DefaultPageSize        = 500
	DefaultLinger          = 10 * time.Millisecond
	DefaultLeaseTimeout    = time.Minute
	DefaultRetention       = 24 * time.Hour
	DefaultPruneBatchSize  = 500
	DefaultPruneInterval   = time.Minute
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultMaxPayload is RabbitMQ's default max_message_size (128 MiB).
	DefaultMaxPayload = wire.DefaultMaxPayload
	// DefaultCommitCheckTimeout bounds finding out whether a COMMIT that lost
	// its connection was committed.
	DefaultCommitCheckTimeout = 5 * time.Second
	// DefaultMaxRowWait is DefaultRetryPolicy's longest wait between two
	// publishes of a row that failed on its own.
	DefaultMaxRowWait = 5 * time.Minute
)

// DefaultRetryPolicy is the budget of a row whose publishes fail on their own
// account (the broker refused or nacked that message): ten attempts, waiting
// 5 s, then doubling up to 5 minutes, about 20 minutes in all before the row
// is retired; a queue that is full for a few minutes does not retire what was
// sent to it.
func DefaultRetryPolicy() retrypolicy.Policy {
	return retrypolicy.Exponential(DefaultMaxAttempts, DefaultRetryDelay, DefaultMaxRowWait)
}

// Options is the entry point for configuring New and NewAdmin:
// sqlmq.Options.StorageHandle(db).
var Options OptionSet

// OptionSet holds the options of New and NewAdmin; each method returns an
// Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures New or NewAdmin.
type Option func(*config)

type config struct {
	db          *sql.DB
	ownsDB      bool
	err         error
	dialect     sqldialect.Dialect
	table       string
	channelCap  int
	retry       time.Duration
	policy      retrypolicy.Policy
	isolation   sql.IsolationLevel
	maxPayload  int
	pageSize    int
	linger      time.Duration
	lease       time.Duration
	sweep       time.Duration
	retention   time.Duration
	pruneBatch  int
	pruneEvery  time.Duration
	shutdown    time.Duration
	commitCheck time.Duration
	logger      *slog.Logger
	monitor     Monitor
	ctx         context.Context
	owner       string
	// dropUnroutable are the exchanges whose rows are published without
	// mandatory (DropUnroutable).
	dropUnroutable map[string]bool

	// newPublisher is the seam unit tests use to replace the batch writer over
	// the transport.
	newPublisher func() publisher
	// readAhead, when set, is told the cursor of each page a catch-up pass
	// read ahead, once the read is done (a seam for unit tests).
	readAhead func(after int64)
}

// StorageHandle is the database holding the outbox table. The outbox never
// closes a handle it was given. Default: none; it or DataSource is required.
func (OptionSet) StorageHandle(db *sql.DB) Option {
	return func(c *config) { c.db, c.ownsDB = db, false }
}

// DataSource opens the database with sql.Open(driver, dsn). The dispatch
// processor closes a handle it opened this way when it is closed. Default:
// none; StorageHandle or DataSource is required.
func (OptionSet) DataSource(driver, dsn string) Option {
	return func(c *config) {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			c.err = fmt.Errorf("sqlmq: open the %q database: %w (is the driver imported?)", driver, err)
			return
		}
		c.db, c.ownsDB = db, true
	}
}

// Dialect chooses the SQL dialect of the database: sqldialect.MySQL (also for
// MariaDB 10.6 and later), PostgreSQL or SQLite. Default: sqldialect.MySQL.
func (OptionSet) Dialect(d sqldialect.Dialect) Option { return func(c *config) { c.dialect = d } }

// Table names the outbox table. The name must be a plain identifier,
// optionally qualified by a schema (letters, digits, underscores). Default:
// DefaultTable, "Messages".
func (OptionSet) Table(name string) Option { return func(c *config) { c.table = name } }

// ChannelBufferCapacity is the number of committed messages the dispatch
// processor accepts into memory ahead of publishing them. When it is full,
// Commit does not wait: the rows are already durable, and the processor
// publishes them from the table once it has caught up. Default: 1024.
func (OptionSet) ChannelBufferCapacity(capacity int) Option {
	return func(c *config) { c.channelCap = capacity }
}

// RetryDelay is the wait before publishing again after the broker could not be
// used at all (unreachable, publishing paused by an alarm: the rows wait in
// order and nothing is counted against them), before a read of the table that
// failed is tried again, and before a row set aside without counting (its
// connection was lost under it) is tried again. Default: 5 s.
func (OptionSet) RetryDelay(d time.Duration) Option { return func(c *config) { c.retry = d } }

// RetryPolicy is the budget of a row whose publishes fail on its own account:
// the broker refused it (unroutable, a missing exchange, too large), nacked it
// (a full queue that rejects publishes), or it failed alone while the others
// published. Each such failure is counted and kept with its error in the row,
// which is tried again after the policy's delay for that attempt while the
// rows behind it move on; at the policy's MaxAttempts (or past its
// GiveUpAfter age, counted from the commit) the row is retired: kept, and
// never published again until an operator releases it. An outage is never
// counted. A row that can never be published (it breaks an AMQP wire limit)
// is retired at once. Default: DefaultRetryPolicy(), ten attempts over about
// 20 minutes.
func (OptionSet) RetryPolicy(policy retrypolicy.Policy) Option {
	return func(c *config) { c.policy = policy }
}

// IsolationLevel is the isolation of the transaction a CommitWriter begins
// (SQLite always runs serializable and ignores it). Default:
// sql.LevelReadCommitted.
func (OptionSet) IsolationLevel(level sql.IsolationLevel) Option {
	return func(c *config) { c.isolation = level }
}

// MaxPayload is the largest payload Write accepts, in bytes. Set it to the
// broker's max_message_size when that is lower, so an over-large message is
// refused by Write with messaging.ErrWireLimit instead of being stored and
// refused by the broker later. On MySQL and MariaDB the server's
// max_allowed_packet must also exceed it (MariaDB's default is 16 MiB), or the
// INSERT of a large row fails and Commit returns that error. Default:
// DefaultMaxPayload, RabbitMQ's default max_message_size (128 MiB).
func (OptionSet) MaxPayload(bytes int) Option { return func(c *config) { c.maxPayload = bytes } }

// PageSize is the most rows read at once by startup recovery and the lease
// sweep, and the largest batch published at once. Default: 500.
func (OptionSet) PageSize(size int) Option { return func(c *config) { c.pageSize = size } }

// Linger bounds how long a busy dispatch processor waits for more committed
// rows before publishing a batch. It lingers only while rows keep arriving
// (each within a millisecond of the last) after rows arrived during its
// previous publish, so a stream of one-message transactions is published and
// marked dispatched in a few large batches instead of many small ones that
// compete with the committing service for the database and the broker. An
// idle processor publishes a lone row at once. Default: 10 ms.
func (OptionSet) Linger(d time.Duration) Option { return func(c *config) { c.linger = d } }

// LeaseTimeout is how long a processor's claim on a row lasts without renewal.
// Another instance may publish a row whose lease expired, so keep it well
// above the time one batch takes to publish (the transport's broker timeout).
// The commit that stores a row leases it to this instance; a row handed to
// the processor with three quarters of that lease still ahead is published
// without renewing it, any other row is renewed first. Instances sharing a
// table need clocks in rough agreement (well within a quarter of the lease).
// Default: 1 minute.
func (OptionSet) LeaseTimeout(d time.Duration) Option { return func(c *config) { c.lease = d } }

// SweepInterval is how often the processor looks for rows no live instance
// holds, such as those of an instance that died after committing. Such rows
// are published within their lease plus this interval, without a restart.
// Default: half the LeaseTimeout.
func (OptionSet) SweepInterval(d time.Duration) Option { return func(c *config) { c.sweep = d } }

// Retention is how long dispatched rows are kept before the processor prunes
// them. Unpublished and retired rows are never pruned. Default: 24 hours.
func (OptionSet) Retention(d time.Duration) Option { return func(c *config) { c.retention = d } }

// PruneBatchSize is the most dispatched rows deleted by one statement.
// Default: 500.
func (OptionSet) PruneBatchSize(size int) Option { return func(c *config) { c.pruneBatch = size } }

// PruneInterval is how often the processor looks for rows past Retention; a
// full batch is followed at once by another. Default: 1 minute.
func (OptionSet) PruneInterval(d time.Duration) Option { return func(c *config) { c.pruneEvery = d } }

// ShutdownTimeout bounds how long Close waits for Listen to return. Default:
// 30 s, the transport's own broker timeout.
func (OptionSet) ShutdownTimeout(d time.Duration) Option { return func(c *config) { c.shutdown = d } }

// CommitCheckTimeout bounds how long Commit asks, when its COMMIT lost its
// connection, whether the transaction was committed: it asks on a new
// connection, again while the database does not answer (a restart), and
// returns ErrCommitUnknown when it still cannot tell. Default: 5 s.
func (OptionSet) CommitCheckTimeout(d time.Duration) Option {
	return func(c *config) { c.commitCheck = d }
}

// Logger receives the outbox's WARN and INFO lines. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives the outbox's counters. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Context is the process context. The dispatch processor runs on it; ending it
// stops the processor as Close does. Default: context.Background().
func (OptionSet) Context(ctx context.Context) Option { return func(c *config) { c.ctx = ctx } }

// DropUnroutable names exchanges (topics) whose messages may reach no queue:
// the outbox publishes their rows without mandatory, so a message nothing is
// bound to is dropped by the broker, confirmed, and marked dispatched,
// instead of staying in the table and being retired. Use it for events that
// are fine to lose while nobody subscribes to them. By default every row is
// published mandatory: a message that reaches no queue is a failed publish,
// counted against the row, and the row stays in the outbox (retired after its
// RetryPolicy) until a queue is bound and an operator releases it. Instances
// sharing a table should name the same exchanges. Default: none.
func (OptionSet) DropUnroutable(topics ...string) Option {
	return func(c *config) {
		if c.dropUnroutable == nil {
			c.dropUnroutable = map[string]bool{}
		}
		for _, topic := range topics {
			c.dropUnroutable[topic] = true
		}
	}
}

// InstanceName names this processor in the lease_owner column. Two processors
// must never share a name. Default: host/pid/random.
func (OptionSet) InstanceName(name string) Option { return func(c *config) { c.owner = name } }

func newConfig(opts []Option) config {
	c := config{isolation: DefaultIsolationLevel}
	options.Apply(&c, opts)
	options.Default(&c.table, DefaultTable)
	options.Positive(&c.channelCap, DefaultChannelBufferCapacity)
	options.Positive(&c.retry, DefaultRetryDelay)
	if c.isolation == sql.LevelDefault {
		c.isolation = DefaultIsolationLevel
	}
	if c.policy.IsZero() {
		c.policy = DefaultRetryPolicy()
	}
	options.Positive(&c.maxPayload, DefaultMaxPayload)
	options.Positive(&c.pageSize, DefaultPageSize)
	options.Positive(&c.linger, DefaultLinger)
	options.Positive(&c.lease, DefaultLeaseTimeout)
	options.Positive(&c.sweep, c.lease/2)
	options.Positive(&c.retention, DefaultRetention)
	options.Positive(&c.pruneBatch, DefaultPruneBatchSize)
	options.Positive(&c.pruneEvery, DefaultPruneInterval)
	options.Positive(&c.shutdown, DefaultShutdownTimeout)
	options.Positive(&c.commitCheck, DefaultCommitCheckTimeout)
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default[context.Context](&c.ctx, context.Background())
	if c.owner == "" {
		c.owner = defaultOwner()
	}
	c.err = c.check()
	return c
}

// check reports what makes the configuration unusable, the first error an
// option recorded first.
func (c config) check() error {
	switch {
	case c.err != nil:
		return c.err
	case c.db == nil:
		return fmt.Errorf("sqlmq: no database; pass sqlmq.Options.StorageHandle(db) or sqlmq.Options.DataSource(driver, dsn)")
	case c.policy.Err() != nil:
		return fmt.Errorf("sqlmq: Options.RetryPolicy: %w", c.policy.Err())
	}
	return sqldialect.CheckTable("sqlmq", c.table)
}
