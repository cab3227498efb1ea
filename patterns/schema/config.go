package schema

import "github.com/warrenmq/messaging/internal/options"

// DefaultTable is the SQL registry's table, the name the other AceMQ
// libraries use, so services in any of them can share it.
const DefaultTable = "acemq_schemas"

// Options is the entry point for configuring NewMemoryRegistry and
// NewSQLRegistry: schema.Options.Table(...).
var Options OptionSet

// OptionSet holds the options of NewMemoryRegistry and NewSQLRegistry; each
// method returns an Option. (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures NewMemoryRegistry and NewSQLRegistry.
type Option func(*config)

type config struct {
	table   string
	monitor Monitor
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default(&c.table, DefaultTable)
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// Table names the SQL registry's table: a plain identifier, optionally
// schema.table. Default: DefaultTable, "acemq_schemas". The memory registry
// ignores it.
func (OptionSet) Table(name string) Option { return func(c *config) { c.table = name } }

// Monitor receives the callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
