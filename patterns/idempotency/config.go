package idempotency

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring Middleware, New and
// InTransaction: idempotency.Options.InProgressDelay(...).
var Options OptionSet

// OptionSet holds the options of Middleware, New and InTransaction; each
// method returns an Option. (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures Middleware, New and InTransaction.
type Option func(*config)

// DefaultStoreTimeout bounds each call the guard makes to its store.
const DefaultStoreTimeout = 10 * time.Second

type config struct {
	inProgressDelay time.Duration
	key             func(message any, delivery messaging.Delivery) string
	storeTimeout    time.Duration
	monitor         Monitor
	logger          *slog.Logger
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Positive(&c.inProgressDelay, DefaultInProgressDelay)
	options.Positive(&c.storeTimeout, DefaultStoreTimeout)
	if c.key == nil {
		c.key = messageID
	}
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default(&c.logger, slog.Default())
	return c
}

// messageID is the default key: the message's id (the AceMQ envelope id).
func messageID(_ any, delivery messaging.Delivery) string { return delivery.MessageID }

// InProgressDelay is how long a message whose key is in progress waits before
// it is put back on its queue. Default: DefaultInProgressDelay, 5 s; zero or
// negative means the default. Keep it well under the store's claim timeout.
func (OptionSet) InProgressDelay(delay time.Duration) Option {
	return func(c *config) { c.inProgressDelay = delay }
}

// IdempotentBy takes the key from the message instead of its id, for when two
// different messages are about the same thing. key receives the decoded
// message and its envelope; an empty key is fatal: the message is
// dead-lettered, never handled without a guard. Default: the message id
// (nil means the default).
func (OptionSet) IdempotentBy(key func(message any, delivery messaging.Delivery) string) Option {
	return func(c *config) { c.key = key }
}

// StoreTimeout bounds each store call. Default: DefaultStoreTimeout, 10 s;
// zero or negative means the default. Renew, Confirm and Release run detached
// from the handler's cancellation, within this bound, so a shutdown does not
// leave claims behind.
func (OptionSet) StoreTimeout(timeout time.Duration) Option {
	return func(c *config) { c.storeTimeout = timeout }
}

// Monitor receives the callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Logger receives the WARN lines of a failed store call and of a lost claim.
// Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// StoreOptions is the entry point for configuring NewMemoryStore and
// NewSQLStore: idempotency.StoreOptions.ClaimTimeout(...).
var StoreOptions StoreOptionSet

// StoreOptionSet holds the options of NewMemoryStore and NewSQLStore; each
// method returns a StoreOption. (Exported so go doc lists them.)
type StoreOptionSet struct{}

// StoreOption configures NewMemoryStore and NewSQLStore.
type StoreOption func(*storeConfig)

// DefaultTable is the SQL store's table, the name the other AceMQ libraries
// use, so services in any of them can share it.
const DefaultTable = "acemq_idempotency"

type storeConfig struct {
	claimTimeout time.Duration
	table        string
}

func newStoreConfig(opts []StoreOption) storeConfig {
	c := storeConfig{table: DefaultTable}
	options.Apply(&c, opts)
	options.Positive(&c.claimTimeout, DefaultClaimTimeout)
	options.Default(&c.table, DefaultTable)
	return c
}

// ClaimTimeout is the lease of a claim: a claim neither confirmed, released
// nor renewed within it is taken again by the next delivery of its message.
// The guard renews its claims every third of it while the handler runs.
// Default: DefaultClaimTimeout, 5 min; zero or negative means the default.
func (StoreOptionSet) ClaimTimeout(timeout time.Duration) StoreOption {
	return func(c *storeConfig) { c.claimTimeout = timeout }
}

// Table names the SQL store's table: a plain identifier, optionally
// schema.table. Default: DefaultTable, "acemq_idempotency". The memory store
// ignores it.
func (StoreOptionSet) Table(name string) StoreOption { return func(c *storeConfig) { c.table = name } }
