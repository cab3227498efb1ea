package idempotency

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
)

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

// DefaultStoreTimeout bounds each call New makes to its store.
const DefaultStoreTimeout = 10 * time.Second

type config struct {
	inProgressDelay time.Duration
	key             func(message any, delivery messaging.Delivery) string
	storeTimeout    time.Duration
	monitor         Monitor
	logger          *slog.Logger
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.inProgressDelay <= 0 {
		c.inProgressDelay = DefaultInProgressDelay
	}
	if c.storeTimeout <= 0 {
		c.storeTimeout = DefaultStoreTimeout
	}
	if c.key == nil {
		c.key = messageID
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	return c
}

// messageID is the default key: the message's id (the AceMQ envelope id).
func messageID(_ any, delivery messaging.Delivery) string { return delivery.MessageID }

// InProgressDelay is how long a message whose key is in progress waits before
// it is put back on its queue (default DefaultInProgressDelay, 5 s; zero or
// negative means the default). Keep it well under the store's claim timeout.
func (singleton) InProgressDelay(delay time.Duration) option {
	return func(c *config) { c.inProgressDelay = delay }
}

// IdempotentBy takes the key from the message instead of its id, for when two
// different messages are about the same thing. key receives the decoded
// message and its envelope; an empty key is fatal: the message is
// dead-lettered, never handled without a guard. nil means the message id.
func (singleton) IdempotentBy(key func(message any, delivery messaging.Delivery) string) option {
	return func(c *config) { c.key = key }
}

// StoreTimeout bounds each store call (default DefaultStoreTimeout, 10 s; zero
// or negative means the default). Confirm and Release run detached from the
// handler's cancellation, within this bound, so a shutdown does not leave
// claims behind.
func (singleton) StoreTimeout(timeout time.Duration) option {
	return func(c *config) { c.storeTimeout = timeout }
}

// Monitor receives the counts (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}

// Logger receives the WARN lines of a failed Confirm or Release (default
// slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *config) { c.logger = logger }
}

// StoreOptions configures NewMemoryStore and NewSQLStore. It is a singleton
// whose methods return options.
var StoreOptions storeSingleton

type storeSingleton struct{}

type storeOption func(*storeConfig)

// StoreOption is the type of StoreOptions' values.
type StoreOption = storeOption

// DefaultTable is the SQL store's table, the name the other AceMQ libraries
// use, so services in any of them can share it.
const DefaultTable = "acemq_idempotency"

type storeConfig struct {
	claimTimeout time.Duration
	table        string
}

func newStoreConfig(options []storeOption) storeConfig {
	c := storeConfig{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.claimTimeout <= 0 {
		c.claimTimeout = DefaultClaimTimeout
	}
	if c.table == "" {
		c.table = DefaultTable
	}
	return c
}

// ClaimTimeout is the lease of a claim (default DefaultClaimTimeout, 5 min;
// zero or negative means the default): a claim neither confirmed nor released
// within it is taken again by the next delivery of its message.
func (storeSingleton) ClaimTimeout(timeout time.Duration) storeOption {
	return func(c *storeConfig) { c.claimTimeout = timeout }
}

// Table names the SQL store's table (default DefaultTable,
// "acemq_idempotency"): a plain identifier, optionally schema.table. The
// memory store ignores it.
func (storeSingleton) Table(name string) storeOption {
	return func(c *storeConfig) { c.table = name }
}
