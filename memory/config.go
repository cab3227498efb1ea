package memory

import (
	"log/slog"
	"os"

	"github.com/warrenmq/messaging/internal/wire"
)

// Options is the entry point for configuring a Broker: memory.New(memory.Options.Monitor(...)).
var Options singleton

type singleton struct{}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type configuration struct {
	monitor Monitor
	logger  *slog.Logger
	origin  string
	// maxMessageSize is the largest payload a write accepts.
	maxMessageSize int
}

// Monitor receives the broker's callbacks. A nil monitor means no monitoring.
func (singleton) Monitor(monitor Monitor) option {
	return func(c *configuration) { c.monitor = monitor }
}

// Logger receives the broker's WARN lines (a stream's declaration that
// differs from what exists). A nil logger means slog.Default().
func (singleton) Logger(logger *slog.Logger) option {
	return func(c *configuration) { c.logger = logger }
}

// Origin sets the origin written on messages that do not name one
// (service@host). Empty means acemq@{hostname}.
func (singleton) Origin(origin string) option {
	return func(c *configuration) { c.origin = origin }
}

// MaxMessageSize is the largest payload, in bytes, a writer accepts; a dispatch
// with a larger one is refused alone with a *messaging.FieldError matching
// messaging.ErrWireLimit, as the RabbitMQ transport's option of the same name
// does. Zero or negative means wire.DefaultMaxPayload (128 MiB).
func (singleton) MaxMessageSize(value int) option {
	return func(c *configuration) { c.maxMessageSize = value }
}

func newConfiguration(options []option) configuration {
	var c configuration
	for _, apply := range options {
		if apply != nil {
			apply(&c)
		}
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.maxMessageSize <= 0 {
		c.maxMessageSize = wire.DefaultMaxPayload
	}
	if c.origin == "" {
		c.origin = defaultOrigin()
	}
	return c
}

func defaultOrigin() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return "acemq@" + host
}
