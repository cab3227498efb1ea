package saga

import "github.com/warrenmq/messaging/internal/options"

// Options is the entry point for configuring New: saga.Options.Monitor(...).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option.
// (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	monitor Monitor
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// Monitor receives the callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
