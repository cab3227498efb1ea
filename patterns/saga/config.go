package saga

// Options configures New. It is a singleton whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

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

// Monitor receives the counts (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}
