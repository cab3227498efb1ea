package middleware

import "time"

// Options configures Timeout, Logging and Recovery. It is a singleton whose
// methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values.
type Option = option

// DefaultTimeout is Timeout's bound when it is given zero or less: a wait is
// always bounded.
const DefaultTimeout = 30 * time.Second

type config struct {
	monitor Monitor
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// Monitor receives what Timeout and Recovery decided (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}
