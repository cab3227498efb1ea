package rabbitmq

import (
	"crypto/tls"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/options"
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

// Options is the entry point for configuring New:
// rabbitmq.New(rabbitmq.Options.Address("amqp://..."), rabbitmq.Options.Monitor(m)).
var Options OptionSet

// OptionSet holds the options of New; each method returns an Option. (It is
// exported so that go doc lists them.)
type OptionSet struct{}

// Option configures New.
type Option func(*config)

type config struct {
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
	// shareConnections makes every Connect a handle on the connector's
	// shared connections (share.go).
	shareConnections bool
}

// Address is the broker's AMQP URI (amqps:// dials TLS). Default
// amqp://guest:guest@127.0.0.1:5672/. It is Addresses with one address.
func (OptionSet) Address(value string) Option {
	return func(c *config) { c.addresses = []string{value} }
}

// Addresses are the AMQP URIs of a cluster's nodes (or a load balancer and
// its fallbacks), tried in order: Connect dials the address that last
// answered, or after a connection from it was lost the next one, and goes on
// down the list (wrapping round) until one answers, each dial bounded by the
// broker timeout. A refusal no other node would answer differently (bad
// credentials, a missing vhost, a malformed address) stops at once. Empty
// entries are ignored; none at all means the default address.
func (OptionSet) Addresses(values ...string) Option {
	return func(c *config) {
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
func (OptionSet) TLS(value *tls.Config) Option { return func(c *config) { c.tls = value } }

// Heartbeat is the AMQP heartbeat interval; a dead socket goes unnoticed for about
// 1.5 times this value. Default 10s.
func (OptionSet) Heartbeat(value time.Duration) Option {
	return func(c *config) { c.heartbeat = value }
}

// BrokerTimeout bounds every wait on the broker: connect, channel open, declare,
// publish, confirm, commit, acknowledge, cancel and close. A wait that reaches it
// severs the connection. Default 30s.
func (OptionSet) BrokerTimeout(value time.Duration) Option {
	return func(c *config) { c.brokerTimeout = value }
}

// Dialer replaces the amqp091-go dialer, for tests with fakes. Default:
// adapter.NewDialer().
func (OptionSet) Dialer(value adapter.Dialer) Option { return func(c *config) { c.dialer = value } }

// Logger receives the transport's WARN and INFO lines. Default: slog.Default().
func (OptionSet) Logger(value *slog.Logger) Option { return func(c *config) { c.logger = value } }

// Monitor receives the transport's callbacks. Default: NopMonitor.
func (OptionSet) Monitor(value Monitor) Option { return func(c *config) { c.monitor = value } }

// ConnectionName is reported to the broker as the connection_name property, which
// the management UI and rabbitmqctl show. Default: none.
func (OptionSet) ConnectionName(value string) Option {
	return func(c *config) { c.connectionName = value }
}

// MaxOutstandingPublishes bounds the publishes awaiting a confirm on one channel.
// A write that finds the window full waits for a slot within its ctx and the
// broker timeout, then fails with ErrTooManyOutstanding; if no confirm at all
// arrived in that broker timeout, the broker has stopped confirming, so the
// connection is severed and the error wraps ErrPublishTimeout. Default 1000.
func (OptionSet) MaxOutstandingPublishes(value int) Option {
	return func(c *config) { c.maxOutstanding = value }
}

// MaxMessageSize is the largest payload, in bytes, a writer sends; a dispatch
// with a larger one is refused alone, before anything is sent, with a
// *messaging.FieldError matching messaging.ErrWireLimit. Set it to the broker's
// max_message_size when that is lower than RabbitMQ's default, so that the
// broker never has to refuse a message (which closes the writer's channel).
// Default 128 MiB, RabbitMQ's default.
func (OptionSet) MaxMessageSize(value int) Option {
	return func(c *config) { c.maxMessageSize = value }
}

// Origin is written as x-acemq-origin when a Dispatch has none. Default
// acemq@{hostname}, or acemq@unknown when the host has no name.
func (OptionSet) Origin(value string) Option { return func(c *config) { c.origin = value } }

// ShareConnections makes the connector keep one publishing and one consuming
// AMQP connection for everything it serves, as RabbitMQ advises (a few
// long-lived connections per process, channels multiplexed over them): each
// Connect returns a handle whose writers and commit writers are channels of
// the publishing connection and whose readers, streams and declarations are
// channels of the consuming one, so a memory alarm that blocks publishing
// never holds up an acknowledgement. A channel's refusal closes only that
// channel; a handle's Close closes only its own channels, and the shared
// connection closes with the last handle. When a shared connection drops,
// every handle on it fails with messaging.ErrClosed as before, and the
// Connects that follow dial one new connection between them. What a
// connection of its own would isolate is shared instead: a wait that passes
// the broker timeout severs the shared connection, and an exclusive queue
// belongs to the consuming connection rather than to one handle. Default
// false: every Connect dials a connection of its own.
func (OptionSet) ShareConnections(value bool) Option {
	return func(c *config) { c.shareConnections = value }
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	if len(c.addresses) == 0 || (len(c.addresses) == 1 && c.addresses[0] == "") {
		c.addresses = []string{DefaultAddress}
	}
	options.Positive(&c.heartbeat, DefaultHeartbeat)
	options.Positive(&c.brokerTimeout, DefaultBrokerTimeout)
	if c.dialer == nil {
		c.dialer = adapter.NewDialer()
	}
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Positive(&c.maxOutstanding, DefaultMaxOutstandingPublishes)
	options.Positive(&c.maxMessageSize, wire.DefaultMaxPayload)
	if c.origin == "" {
		c.origin = wire.HostOrigin()
	}
	return c
}
