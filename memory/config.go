package memory

import (
	"log/slog"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/internal/wire"
)

// Options is the entry point for configuring New:
// memory.New(memory.Options.Monitor(m), memory.Options.Origin("orders@test")).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. (It is
// exported so that go doc lists them.)
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	monitor Monitor
	logger  *slog.Logger
	origin  string
	// maxMessageSize is the largest payload a write accepts.
	maxMessageSize int
}

// Monitor receives the broker's callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Logger receives the broker's WARN lines (a stream's declaration that
// differs from what exists). Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Origin sets the origin written on messages that do not name one
// (service@host). Default acemq@{hostname}.
func (OptionSet) Origin(origin string) Option { return func(c *config) { c.origin = origin } }

// MaxMessageSize is the largest payload, in bytes, a writer accepts; a dispatch
// with a larger one is refused alone with a *messaging.FieldError matching
// messaging.ErrWireLimit, as the RabbitMQ transport's option of the same name
// does. Default 128 MiB, RabbitMQ's default.
func (OptionSet) MaxMessageSize(value int) Option {
	return func(c *config) { c.maxMessageSize = value }
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Positive(&c.maxMessageSize, wire.DefaultMaxPayload)
	if c.origin == "" {
		c.origin = wire.HostOrigin()
	}
	return c
}
