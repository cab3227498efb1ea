package transactional

import (
	"log/slog"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New: transactional.Options.Monitor(m).
var Options OptionSet

// OptionSet holds the options of New and Middleware; each method returns an
// Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures New or Middleware.
type Option func(*config)

type config struct {
	name    string
	logger  *slog.Logger
	monitor Monitor
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default(&c.name, "transactional")
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// Name labels the decorator's errors and log lines, so a service with two
// transactional handlers (on two databases, say) can tell their failures
// apart. Default: "transactional".
func (OptionSet) Name(name string) Option { return func(c *config) { c.name = name } }

// Logger receives the rollback and close failures. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives one callback per step of each batch's transaction.
// Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
