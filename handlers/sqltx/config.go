package sqltx

import (
	"database/sql"
	"log/slog"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New: sqltx.Options.IsolationLevel(...).
var Options OptionSet

// OptionSet holds the options of New and Middleware; each method returns an
// Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures New or Middleware.
type Option func(*config)

type config struct {
	isolation sql.IsolationLevel
	logger    *slog.Logger
	monitor   Monitor
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	return c
}

// IsolationLevel sets the isolation of each batch's transaction. Default:
// sql.LevelDefault, the database's own default.
func (OptionSet) IsolationLevel(level sql.IsolationLevel) Option {
	return func(c *config) { c.isolation = level }
}

// Logger receives the rollback failures. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives one callback per step of each batch's transaction.
// Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
