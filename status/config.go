package status

import (
	"context"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring New:
// status.Options.Connector(transport).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. It is
// exported so that go doc lists them.
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
	connector        messaging.Connector
	topic            string
	routingKey       string
	failureTolerance time.Duration
	severTimeout     time.Duration
	logger           *slog.Logger
	checks           []namedCheck
	checkTimeout     time.Duration
	secrets          []string
}

type namedCheck struct {
	name  string
	check func(context.Context) error
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Default(&c.topic, "amq.direct")
	options.Default(&c.routingKey, "warrenmq-status-probe")
	options.Positive(&c.failureTolerance, 30*time.Second)
	options.Positive(&c.severTimeout, 5*time.Second)
	options.Default(&c.logger, slog.Default())
	options.Positive(&c.checkTimeout, 5*time.Second)
	return c
}

// Connector is the transport the probe publishes through. Required: there is
// no default, and without it Status and Probe return ErrNoConnector.
func (OptionSet) Connector(value messaging.Connector) Option {
	return func(c *config) { c.connector = value }
}

// Topic is the exchange the probe publishes to; default amq.direct, which every
// RabbitMQ vhost has. A probe to a missing exchange fails at once (404).
func (OptionSet) Topic(value string) Option { return func(c *config) { c.topic = value } }

// RoutingKey is the probe's routing key; default "warrenmq-status-probe". Nothing
// needs to be bound to it: the probe is not mandatory.
func (OptionSet) RoutingKey(value string) Option { return func(c *config) { c.routingKey = value } }

// FailureTolerance is how long consecutive failures are logged and tolerated
// before Status returns them; default 30 s. Zero or negative means the default.
func (OptionSet) FailureTolerance(value time.Duration) Option {
	return func(c *config) { c.failureTolerance = value }
}

// SeverTimeout is how long Status waits for a stalled probe to return after the
// caller's context ended and the connection was severed; default 5 s. Zero or
// negative means the default.
func (OptionSet) SeverTimeout(value time.Duration) Option {
	return func(c *config) { c.severTimeout = value }
}

// Logger receives the WARN lines for tolerated failures; default slog.Default().
func (OptionSet) Logger(value *slog.Logger) Option { return func(c *config) { c.logger = value } }

// Check adds a dependency to Report under name: check returns nil when the
// dependency answers (for a database, a ping), and must honour its context,
// which ends after CheckTimeout. A failing check fails the report at once.
// Default: none; Report then holds the broker probe alone.
func (OptionSet) Check(name string, check func(ctx context.Context) error) Option {
	return func(c *config) {
		if check != nil {
			c.checks = append(c.checks, namedCheck{name: name, check: check})
		}
	}
}

// CheckTimeout bounds each check of Report, the broker probe included; default
// 5 s. Zero or negative means the default.
func (OptionSet) CheckTimeout(value time.Duration) Option {
	return func(c *config) { c.checkTimeout = value }
}

// Redact names addresses (the broker's, a database DSN) whose passwords must
// never appear in what the checker returns, logs or reports; each is masked as
// given and percent-decoded, with internal/redact, which does not need the
// address to parse. Default: none.
func (OptionSet) Redact(addresses ...string) Option {
	return func(c *config) { c.secrets = append(c.secrets, addresses...) }
}
