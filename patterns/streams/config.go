package streams

import (
	"log/slog"
	"math"
	"time"

	"github.com/warrenmq/messaging/internal/options"
)

// Options is the entry point for configuring Read: streams.Options.From(...).
var Options OptionSet

// OptionSet holds the options of Read; each method returns an Option.
// (Exported so go doc lists them.)
type OptionSet struct{}

// Option configures Read.
type Option func(*config)

// DefaultPrefetch is the prefetch of a reader that states none. RabbitMQ
// refuses a stream consumer without one, so there is always one. It is a
// conservative local choice (a handler holds at most ten bodies), not part
// of the cross-language contract; a projection reading a long history wants
// more (Options.Prefetch(500)).
const DefaultPrefetch = 10

// DefaultTagPrefix is what the consumer tag of a reader without Options.Name
// starts with: acemq-{stream}, the tag every AceMQ library gives its
// consumers, so an operator finds the reader in the management interface by
// its stream. Each reader has a channel of its own, so two readers of one
// stream can both carry it.
const DefaultTagPrefix = "acemq-"

// DefaultReconnectDelay is the pause before a dropped reader is reattached.
const DefaultReconnectDelay = time.Second

// refusal is the why of the runtime's own RefuseRetry, the backstop behind
// RefuseRetry's middleware.
const refusal = "a stream cannot take a message back: a republish appends a copy to the log"

type config struct {
	offset         Offset
	prefetch       int
	name           string
	batch          int
	fullDelivery   bool
	reconnectDelay time.Duration
	logger         *slog.Logger
	monitor        Monitor
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Positive(&c.prefetch, DefaultPrefetch)
	c.prefetch = min(c.prefetch, math.MaxUint16)
	c.batch = min(max(c.batch, 1), math.MaxUint16)
	options.Positive(&c.reconnectDelay, DefaultReconnectDelay)
	options.Default(&c.logger, slog.Default())
	options.Default[Monitor](&c.monitor, NopMonitor{})
	return c
}

// From states where the reader starts each time Read starts it. Default:
// FromNext(). State it: a projection that inherits FromNext silently skips its
// own history. A reconnect does not go back to it (see Read).
func (OptionSet) From(offset Offset) Option { return func(c *config) { c.offset = offset } }

// Prefetch is how many deliveries the broker sends ahead of the handler, at
// most 65535. Default: DefaultPrefetch, 10; zero or negative means the
// default. It also bounds what a reconnect hands over a second time.
func (OptionSet) Prefetch(prefetch int) Option { return func(c *config) { c.prefetch = prefetch } }

// Name becomes the consumer tag exactly, as the management interface shows
// it. Default: DefaultTagPrefix and the stream's name (acemq-orders.log). It
// is neither a group identifier nor a checkpoint: the broker remembers nothing
// about a named consumer.
func (OptionSet) Name(name string) Option { return func(c *config) { c.name = name } }

// Batch is the largest batch handed to the handler. Default: 1. Batches never
// wait to fill.
func (OptionSet) Batch(size int) Option { return func(c *config) { c.batch = size } }

// FullDelivery hands the handler messaging.Delivery values instead of their
// decoded Message. Default: false; the envelopes are in the context either
// way (messaging.DeliveriesFrom).
func (OptionSet) FullDelivery(full bool) Option { return func(c *config) { c.fullDelivery = full } }

// ReconnectDelay is the pause before a dropped reader is reattached; the
// runtime doubles it on consecutive failures, up to 30 s. Default:
// DefaultReconnectDelay, 1 s; zero or negative means the default.
func (OptionSet) ReconnectDelay(delay time.Duration) Option {
	return func(c *config) { c.reconnectDelay = delay }
}

// Logger sets the logger of the runtime underneath. Default: slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// Monitor receives the callbacks. Default: NopMonitor.
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }
