package middleware

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring Timeout, Logging and Recovery:
// middleware.Options.Monitor(...), middleware.Options.Logger(...).
var Options OptionSet

// OptionSet holds the options of Timeout, Logging and Recovery; each method
// returns an Option. (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures Timeout, Logging and Recovery.
type Option func(*config)

// DefaultTimeout is Timeout's bound when it is given zero or less: a wait is
// always bounded.
const DefaultTimeout = 30 * time.Second

type config struct {
	monitor Monitor
	logger  *slog.Logger
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default(&c.logger, slog.Default())
	return c
}

// Monitor receives what Timeout and Recovery decided. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Logger is where Logging writes its lines when it is given no printf.
// Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }
