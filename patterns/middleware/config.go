package middleware

import (
	"time"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring Timeout, Logging and Recovery:
// middleware.Options.Monitor(...).
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
}

func newConfig(opts []Option) config {
	c := config{}
	options.Apply(&c, opts)
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// Monitor receives what Timeout and Recovery decided. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
