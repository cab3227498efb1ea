package ordering

import (
	"time"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring Middleware and New:
// ordering.Options.ArrivalWindow(...).
var Options OptionSet

// OptionSet holds the options of Middleware and New; each method returns an
// Option. (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures Middleware and New.
type Option func(*config)

// DefaultArrivalWindow is how long a delivery waits for the earlier
// deliveries of its stream that another worker took first but has not yet
// handed to ordering.
const DefaultArrivalWindow = 100 * time.Millisecond

type config struct {
	window  time.Duration
	monitor Monitor
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Positive(&c.window, DefaultArrivalWindow)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// ArrivalWindow bounds how long a delivery waits for earlier deliveries of
// its stream (lower delivery tags) to reach ordering. Default:
// DefaultArrivalWindow, 100 ms; zero or negative means the default. Workers
// take deliveries in order but reach the handler in any order; the window
// lets the earlier one claim its key first. A delivery that never arrives (set
// aside before the handler, filtered) costs the ones after it this wait once.
func (OptionSet) ArrivalWindow(window time.Duration) Option {
	return func(c *config) { c.window = window }
}

// Monitor receives the waits. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
