package sqltx

import (
	"database/sql"
	"log/slog"

	"github.com/warrenmq/messaging/handlers/transactional"
	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New: sqltx.Options.IsolationLevel(...).
var Options OptionSet

// OptionSet holds the options of New and Middleware; each method returns an
// Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures New or Middleware.
type Option func(*config)

// config is the isolation sqltx applies itself and the options it hands to
// handlers/transactional, which runs its batches.
type config struct {
	isolation sql.IsolationLevel
	core      []transactional.Option
}

func newConfig(opts []Option) config { return options.New(opts) }

// IsolationLevel sets the isolation of each batch's transaction. Default:
// sql.LevelDefault, the database's own default.
func (OptionSet) IsolationLevel(level sql.IsolationLevel) Option {
	return func(c *config) { c.isolation = level }
}

// Logger receives the rollback failures. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option {
	return forward(transactional.Options.Logger(logger))
}

// Monitor receives one callback per step of each batch's transaction.
// Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option {
	return forward(transactional.Options.Monitor(monitor))
}

// forward hands option to the transactional core.
func forward(option transactional.Option) Option {
	return func(c *config) { c.core = append(c.core, option) }
}
