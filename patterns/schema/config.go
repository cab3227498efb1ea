package schema

import "time"

// DefaultTable is the SQL registry's table, the name the other AceMQ
// libraries use, so services in any of them can share it.
const DefaultTable = "acemq_schemas"

// Options configures NewMemoryRegistry and NewSQLRegistry. It is a singleton
// whose methods return options.
var Options singleton

type singleton struct{}

type option func(*config)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling a constructor.
type Option = option

type config struct {
	table   string
	now     func() time.Time
	monitor Monitor
}

func newConfig(options []option) config {
	c := config{}
	for _, o := range options {
		if o != nil {
			o(&c)
		}
	}
	if c.table == "" {
		c.table = DefaultTable
	}
	c.now = time.Now
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	return c
}

// Table names the SQL registry's table (default DefaultTable,
// "acemq_schemas"): a plain identifier, optionally schema.table. The memory
// registry ignores it.
func (singleton) Table(name string) option {
	return func(c *config) { c.table = name }
}

// Monitor receives the counts (default: none).
func (singleton) Monitor(monitor Monitor) option {
	return func(c *config) { c.monitor = monitor }
}
