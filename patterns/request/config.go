package request

import (
	"log/slog"
	"time"

	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/serialization"
	"github.com/warrenmq/messaging/streaming"
)

// Options is the entry point for configuring NewRequester, NewHandler and
// Serve: request.Options.Timeout(...). Each option says which side it
// applies to; the other side ignores it.
var Options OptionSet

// OptionSet holds the options of NewRequester, NewHandler and Serve; each
// method returns an Option. It is exported so that go doc lists them.
type OptionSet struct{}

// Option configures NewRequester, NewHandler or Serve.
type Option func(*config)

// Defaults.
const (
	// DefaultTimeout is how long Do waits for a reply.
	DefaultTimeout = 30 * time.Second
	// DefaultReplyPrefetch is how many replies the broker hands the
	// requester before it acknowledges them.
	DefaultReplyPrefetch = 256
	// DefaultReconnectDelay is the first pause before the requester's reply
	// subscription declares its reply queue again after losing it.
	DefaultReconnectDelay = 100 * time.Millisecond
	// DefaultCloseTimeout is how long Close lets handlers in progress finish.
	DefaultCloseTimeout = 10 * time.Second

	// replyQueuePrefix names generated reply queues (acemq-reply-<uuid>).
	replyQueuePrefix = "acemq-reply-"
)

// Serializer encodes requests (requester) and replies (responder).
type Serializer = serialization.Serializer

// Deserializer decodes replies (requester) and requests (responder).
type Deserializer = serialization.Deserializer

type config struct {
	timeout        time.Duration
	replyTo        string
	serializer     Serializer
	deserializer   Deserializer
	messageType    string
	monitor        Monitor
	logger         *slog.Logger
	reconnectDelay time.Duration
	closeTimeout   time.Duration
	workers        int
	subscription   []streaming.SubscriptionOption
}

func newConfig(opts []Option) config {
	c := options.New(opts)
	options.Positive(&c.timeout, DefaultTimeout)
	options.Default[Serializer](&c.serializer, serialization.JSON{})
	options.Default[Deserializer](&c.deserializer, serialization.JSON{})
	options.Default[Monitor](&c.monitor, NopMonitor{})
	options.Default(&c.logger, slog.Default())
	options.Positive(&c.reconnectDelay, DefaultReconnectDelay)
	options.Positive(&c.closeTimeout, DefaultCloseTimeout)
	c.workers = max(c.workers, 1)
	return c
}

// Timeout is how long Do waits for a reply before it returns
// ErrRequestTimedOut (requester; default DefaultTimeout, 30 s; zero or
// negative means the default). It runs beside the caller's context: whichever
// ends first decides what Do returns.
func (OptionSet) Timeout(timeout time.Duration) Option {
	return func(c *config) { c.timeout = timeout }
}

// ReplyTo makes the requester read replies from the named queue instead of a
// generated one (requester; default a generated acemq-reply-<uuid>). The named queue is durable, so quorum, with no
// expiry, and survives the process: deleting it is the caller's job. Replies
// left in it by a previous run, or meant for another requester sharing it,
// are dropped (Monitor.ReplyDropped).
func (OptionSet) ReplyTo(queue string) Option { return func(c *config) { c.replyTo = queue } }

// Codec replaces JSON for both sides: the requester encodes requests with
// serializer and decodes replies with deserializer, the responder the other
// way round (default serialization.JSON for both). Either may be nil to keep
// JSON.
func (OptionSet) Codec(serializer Serializer, deserializer Deserializer) Option {
	return func(c *config) { c.serializer, c.deserializer = serializer, deserializer }
}

// MessageType is written to every request (requester; default none), for a
// responder that routes on types.
func (OptionSet) MessageType(messageType string) Option {
	return func(c *config) { c.messageType = messageType }
}

// Monitor receives the counts (both sides; default NopMonitor).
func (OptionSet) Monitor(monitor Monitor) Option { return func(c *config) { c.monitor = monitor } }

// Logger receives the requester's WARN line when it loses its reply queue,
// and the lines of its reply subscription and of Serve's consumer. Default:
// slog.Default().
func (OptionSet) Logger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// ReconnectDelay is the first pause before the requester's reply
// subscription declares its reply queue again after losing it (default
// DefaultReconnectDelay, 100 ms); the streaming runtime's backoff follows
// while the broker stays away.
func (OptionSet) ReconnectDelay(delay time.Duration) Option {
	return func(c *config) { c.reconnectDelay = delay }
}

// CloseTimeout is how long Close lets the handlers in progress finish before
// it cancels them (both sides; the subscription's drain, see
// streaming.SubscriptionOptions.ShutdownStrategy; default DefaultCloseTimeout,
// 10 s). A responder given its own ShutdownStrategy through
// Options.Subscription uses that strategy, and CloseTimeout does not apply to
// it.
func (OptionSet) CloseTimeout(timeout time.Duration) Option {
	return func(c *config) { c.closeTimeout = timeout }
}

// Workers is how many requests Serve handles at once (Serve; default 1).
func (OptionSet) Workers(workers int) Option { return func(c *config) { c.workers = workers } }

// Subscription passes options to the subscription Serve consumes the request
// queue with (Serve): its capacities, topics, retry policy, shutdown strategy.
// FullDeliveryToHandler is Serve's own and always on. Default: none, the
// subscription's own defaults.
func (OptionSet) Subscription(subscription ...streaming.SubscriptionOption) Option {
	return func(c *config) { c.subscription = append(c.subscription, subscription...) }
}
