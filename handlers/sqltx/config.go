package sqltx

import (
	"database/sql"
	"log/slog"
)

// Options is the entry point for configuring New: sqltx.Options.IsolationLevel(...).
var Options singleton

type singleton struct{}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type configuration struct {
	isolation sql.IsolationLevel
	logger    *slog.Logger
	monitor   Monitor
}

func newConfiguration(options []option) configuration {
	var c configuration
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// IsolationLevel sets the isolation of each batch's transaction. The default,
// sql.LevelDefault, is the database's own default.
func (singleton) IsolationLevel(level sql.IsolationLevel) option {
	return func(c *configuration) { c.isolation = level }
}

// Logger sets the logger for rollback failures (default slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *configuration) { c.logger = logger }
}

// Monitor sets the transaction callbacks (default NopMonitor).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *configuration) { c.monitor = monitor }
}
