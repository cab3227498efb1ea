package transactional

import "log/slog"

// Options is the entry point for configuring New:
// transactional.Options.Monitor(m).
var Options singleton

type singleton struct{}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type configuration struct {
	logger  *slog.Logger
	monitor Monitor
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

// Logger sets the logger for rollback and close failures (default slog.Default()).
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *configuration) { c.logger = logger }
}

// Monitor sets the transaction callbacks (default NopMonitor).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *configuration) { c.monitor = monitor }
}
