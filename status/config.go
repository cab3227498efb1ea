package status

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
)

type configuration struct {
	connector        messaging.Connector
	topic            string
	routingKey       string
	failureTolerance time.Duration
	severTimeout     time.Duration
	logger           *slog.Logger
	now              func() time.Time
}

type option func(*configuration)

type singleton struct{}

// Options configures New.
var Options singleton

// Connector is the transport the probe publishes through (required).
func (singleton) Connector(value messaging.Connector) option {
	return func(c *configuration) { c.connector = value }
}

// Topic is the exchange the probe publishes to; default amq.direct, which every
// RabbitMQ vhost has. A probe to a missing exchange fails at once (404).
func (singleton) Topic(value string) option {
	return func(c *configuration) { c.topic = value }
}

// RoutingKey is the probe's routing key; default "warrenmq-status-probe". Nothing
// needs to be bound to it: the probe is not mandatory.
func (singleton) RoutingKey(value string) option {
	return func(c *configuration) { c.routingKey = value }
}

// FailureTolerance is how long consecutive failures are logged and tolerated
// before Status returns them; default 30 s. Zero or negative means the default.
func (singleton) FailureTolerance(value time.Duration) option {
	return func(c *configuration) { c.failureTolerance = value }
}

// SeverTimeout is how long Status waits for a stalled probe to return after the
// caller's context ended and the connection was severed; default 5 s.
func (singleton) SeverTimeout(value time.Duration) option {
	return func(c *configuration) { c.severTimeout = value }
}

// Logger receives the WARN lines for tolerated failures; default slog.Default().
func (singleton) Logger(value *slog.Logger) option {
	return func(c *configuration) { c.logger = value }
}

// Now is the clock the tolerance window is measured with (for tests).
func (singleton) Now(value func() time.Time) option {
	return func(c *configuration) { c.now = value }
}

func newConfiguration(options []option) configuration {
	c := configuration{}
	for _, option := range options {
		option(&c)
	}
	if c.topic == "" {
		c.topic = "amq.direct"
	}
	if c.routingKey == "" {
		c.routingKey = "warrenmq-status-probe"
	}
	if c.failureTolerance <= 0 {
		c.failureTolerance = 30 * time.Second
	}
	if c.severTimeout <= 0 {
		c.severTimeout = 5 * time.Second
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}
