package ordering

import "time"

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

// DefaultArrivalWindow is how long a delivery waits for the earlier
// deliveries of its stream that another worker took first but has not yet
// handed to ordering.
const DefaultArrivalWindow = 100 * time.Millisecond

type config struct {
	window  time.Duration
	monitor Monitor
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.window <= 0 {
		c.window = DefaultArrivalWindow
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// ArrivalWindow bounds how long a delivery waits for earlier deliveries of
// its stream (lower delivery tags) to reach ordering (default
// DefaultArrivalWindow, 100 ms; zero or negative means the default). Workers
// take deliveries in order but reach the handler in any order; the window
// lets the earlier one claim its key first. A delivery that never arrives (set
// aside before the handler, filtered) costs the ones after it this wait once.
func (singleton) ArrivalWindow(window time.Duration) option {
	return func(c *config) { c.window = window }
}

// Monitor receives the waits (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}
