package status

import (
	"context"
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
	checks           []namedCheck
	checkTimeout     time.Duration
	secrets          []string
}

type namedCheck struct {
	name  string
	check func(context.Context) error
}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

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

// Check adds a dependency to Report under name: check returns nil when the
// dependency answers (for a database, a ping), and must honour its context,
// which ends after CheckTimeout. A failing check fails the report at once.
func (singleton) Check(name string, check func(ctx context.Context) error) option {
	return func(c *configuration) {
		if check != nil {
			c.checks = append(c.checks, namedCheck{name: name, check: check})
		}
	}
}

// CheckTimeout bounds each check of Report, the broker probe included; default
// 5 s. Zero or negative means the default.
func (singleton) CheckTimeout(value time.Duration) option {
	return func(c *configuration) { c.checkTimeout = value }
}

// Redact names addresses (the broker's, a database DSN) whose passwords must
// never appear in what the checker returns, logs or reports; each is masked as
// given and percent-decoded, with internal/redact, which does not need the
// address to parse.
func (singleton) Redact(addresses ...string) option {
	return func(c *configuration) { c.secrets = append(c.secrets, addresses...) }
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
	if c.checkTimeout <= 0 {
		c.checkTimeout = 5 * time.Second
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}
