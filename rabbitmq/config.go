package rabbitmq

import (
	"crypto/tls"
	"log/slog"
	"os"
	"time"

	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

// Defaults of the options. A zero or negative duration or capacity passed to an
// option means its default, never "no limit".
const (
	DefaultAddress                 = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultHeartbeat               = 10 * time.Second
	DefaultBrokerTimeout           = 30 * time.Second
	DefaultMaxOutstandingPublishes = 1000
)

// Options is the entry point for configuring the transport:
// rabbitmq.New(rabbitmq.Options.Address("amqp://..."), rabbitmq.Options.Monitor(m)).
var Options singleton

type singleton struct{}

type option func(*configuration)

// Option is the type of Options' values, exported so options can be collected
// in a slice before calling New.
type Option = option

type configuration struct {
	addresses      []string
	tls            *tls.Config
	heartbeat      time.Duration
	brokerTimeout  time.Duration
	dialer         adapter.Dialer
	logger         *slog.Logger
	monitor        Monitor
	connectionName string
	maxOutstanding int
	maxMessageSize int
	origin         string
}

// Address is the broker's AMQP URI (amqps:// dials TLS). Default
// amqp://guest:guest@127.0.0.1:5672/. It is Addresses with one address.
func (singleton) Address(value string) option {
	return func(c *configuration) { c.addresses = []string{value} }
}

// Addresses are the AMQP URIs of a cluster's nodes (or a load balancer and
// its fallbacks), tried in order: Connect dials the address that last
// answered, or after a connection from it was lost the next one, and goes on
// down the list (wrapping round) until one answers, each dial bounded by the
// broker timeout. A refusal no other node would answer differently (bad
// credentials, a missing vhost, a malformed address) stops at once. Empty
// entries are ignored; none at all means the default address.
func (singleton) Addresses(values ...string) option {
	return func(c *configuration) {
		c.addresses = c.addresses[:0:0]
		for _, value := range values {
			if value != "" {
				c.addresses = append(c.addresses, value)
			}
		}
	}
}

// TLS is the TLS configuration for amqps:// addresses. Default: derived from the
// address.
func (singleton) TLS(value *tls.Config) option {
	return func(c *configuration) { c.tls = value }
}

// Heartbeat is the AMQP heartbeat interval; a dead socket goes unnoticed for about
// 1.5 times this value. Default 10s.
func (singleton) Heartbeat(value time.Duration) option {
	return func(c *configuration) { c.heartbeat = value }
}

// BrokerTimeout bounds every wait on the broker: connect, channel open, declare,
// publish, confirm, commit, acknowledge, cancel and close. A wait that reaches it
// severs the connection. Default 30s.
func (singleton) BrokerTimeout(value time.Duration) option {
	return func(c *configuration) { c.brokerTimeout = value }
}

// Dialer replaces the amqp091-go dialer, for tests with fakes.
func (singleton) Dialer(value adapter.Dialer) option {
	return func(c *configuration) { c.dialer = value }
}

// Logger receives the transport's WARN and INFO lines. Default: slog.Default().
func (singleton) Logger(value *slog.Logger) option {
	return func(c *configuration) { c.logger = value }
}

// Monitor receives the transport's callbacks. Default: a no-op.
func (singleton) Monitor(value Monitor) option {
	return func(c *configuration) { c.monitor = value }
}

// ConnectionName is reported to the broker as the connection_name property, which
// the management UI and rabbitmqctl show. Default: none.
func (singleton) ConnectionName(value string) option {
	return func(c *configuration) { c.connectionName = value }
}

// MaxOutstandingPublishes bounds the publishes awaiting a confirm on one channel.
// A write that finds the window full waits for a slot within its ctx and the
// broker timeout, then fails with ErrTooManyOutstanding; if no confirm at all
// arrived in that broker timeout, the broker has stopped confirming, so the
// connection is severed and the error wraps ErrPublishTimeout. Default 1000.
func (singleton) MaxOutstandingPublishes(value int) option {
	return func(c *configuration) { c.maxOutstanding = value }
}

// MaxMessageSize is the largest payload, in bytes, a writer sends; a dispatch
// with a larger one is refused alone, before anything is sent, with a
// *messaging.FieldError matching messaging.ErrWireLimit. Set it to the broker's
// max_message_size when that is lower than RabbitMQ's default, so that the
// broker never has to refuse a message (which closes the writer's channel).
// Default wire.DefaultMaxPayload (128 MiB, RabbitMQ's default).
func (singleton) MaxMessageSize(value int) option {
	return func(c *configuration) { c.maxMessageSize = value }
}

// Origin is written as x-acemq-origin when a Dispatch has none. Default
// acemq@{hostname}, or acemq@unknown when the host has no name.
func (singleton) Origin(value string) option {
	return func(c *configuration) { c.origin = value }
}

func newConfiguration(options ...option) configuration {
	var c configuration
	for _, apply := range options {
		if apply != nil {
			apply(&c)
		}
	}
	if len(c.addresses) == 0 || (len(c.addresses) == 1 && c.addresses[0] == "") {
		c.addresses = []string{DefaultAddress}
	}
	if c.heartbeat <= 0 {
		c.heartbeat = DefaultHeartbeat
	}
	if c.brokerTimeout <= 0 {
		c.brokerTimeout = DefaultBrokerTimeout
	}
	if c.dialer == nil {
		c.dialer = adapter.NewDialer()
	}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.monitor == nil {
		c.monitor = NopMonitor{}
	}
	if c.maxOutstanding <= 0 {
		c.maxOutstanding = DefaultMaxOutstandingPublishes
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
		return "acemq@unknown"
	}
	return "acemq@" + host
}
