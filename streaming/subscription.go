package streaming

import (
	"maps"
	"math"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/handlers/deadletter"
	"github.com/warrenmq/messaging/internal/options"
	"github.com/warrenmq/messaging/retrypolicy"
)

// Strategy says how a subscription's workers conclude on shutdown.
type Strategy int

const (
	// ShutdownStrategyDrain handles everything already buffered, then stops.
	ShutdownStrategyDrain Strategy = iota
	// ShutdownStrategyCurrentBatch finishes and acknowledges the batch in
	// progress, then stops.
	ShutdownStrategyCurrentBatch
	// ShutdownStrategyImmediate cancels the handlers' context at once and stops
	// before the next batch; a batch whose Handle returns normally is still
	// acknowledged.
	ShutdownStrategyImmediate
)

// String names the strategy.
func (s Strategy) String() string {
	switch s {
	case ShutdownStrategyDrain:
		return "drain"
	case ShutdownStrategyCurrentBatch:
		return "current-batch"
	case ShutdownStrategyImmediate:
		return "immediate"
	default:
		return "unknown"
	}
}

const (
	defaultCapacity = 1
	// defaultBufferCapacity departs from smarty/messaging v4's 1 on purpose:
	// a prefetch of one costs a broker round trip per message (about half the
	// raw client's rate here), while 256 keeps the default within a few
	// percent of it and holds at most 256 unacknowledged deliveries per
	// subscription.
	defaultBufferCapacity = 256
	// defaultReconnectDelay departs from smarty/messaging v4's 5 s on
	// purpose: with a low ceiling on its doubling it brings a consumer back
	// within about two seconds of its broker, where a long outage used to
	// grow the wait to 16 s or more.
	defaultReconnectDelay = retrypolicy.DefaultInitialWait
	// maxReconnectDelay caps the doubling of the reconnect delay after
	// consecutive failed sessions (or is the configured delay, when that is
	// larger): a dial the broker refuses costs little, and a consumer back
	// late holds up everything behind it.
	maxReconnectDelay = 2 * time.Second
	// maxPermanentReconnectDelay caps it instead when the stream cannot open
	// for a reason waiting does not fix (a missing queue, refused access),
	// so a misconfigured consumer does not retry and log every two seconds.
	maxPermanentReconnectDelay = 30 * time.Second
	defaultShutdownTimeout     = 5 * time.Second
	healthySession             = 30 * time.Second
	abandonGrace               = time.Second
)

// Subscription describes one queue to consume and the workers that handle it.
// Build it with NewSubscription.
type Subscription struct {
	queue string
	subscriptionConfig
}

// SubscriptionOptions is the entry point for configuring NewSubscription:
// streaming.SubscriptionOptions.AddWorkers(...).
var SubscriptionOptions SubscriptionOptionSet

// SubscriptionOptionSet holds the options of NewSubscription; each method
// returns a SubscriptionOption. It is exported so that go doc lists them.
type SubscriptionOptionSet struct{}

// SubscriptionOption configures NewSubscription.
type SubscriptionOption func(*subscriptionConfig)

type subscriptionConfig struct {
	name              string
	topics            []string
	workers           []messaging.Handler
	bufferCapacity    uint16
	batchCapacity     uint16
	establishTopology bool
	replication       bool
	deadLetters       bool
	fullDelivery      bool
	// settlement configures the runtime's settlement of the subscription.
	settlement        []deadletter.Option
	reconnectDelay    time.Duration
	strategy          Strategy
	shutdownTimeout   time.Duration
	bindings          []messaging.StreamBinding
	queueType         messaging.QueueType
	queueArguments    map[string]any
	consumerArguments map[string]any
}

// NewSubscription describes a subscription to queue. It needs at least one
// worker (AddWorkers); a subscription without workers never opens its stream.
func NewSubscription(queue string, opts ...SubscriptionOption) *Subscription {
	return &Subscription{queue: queue, subscriptionConfig: newSubscriptionConfig(opts)}
}

func newSubscriptionConfig(opts []SubscriptionOption) subscriptionConfig {
	c := subscriptionConfig{establishTopology: true, deadLetters: true, strategy: ShutdownStrategyDrain}
	options.Apply(&c, opts)
	options.Default(&c.bufferCapacity, defaultBufferCapacity)
	options.Default(&c.batchCapacity, defaultCapacity)
	options.Positive(&c.reconnectDelay, defaultReconnectDelay)
	options.Positive(&c.shutdownTimeout, defaultShutdownTimeout)
	return c
}

// reconnectSchedule is the policy whose backoff gives the waits before a
// session after consecutive failed ones: the reconnect delay, doubled up to
// maxReconnectDelay, jittered.
func (s *Subscription) reconnectSchedule() retrypolicy.Policy {
	return retrypolicy.Exponential(1, s.reconnectDelay, max(maxReconnectDelay, s.reconnectDelay))
}

// permanentSchedule is reconnectSchedule for a stream that could not open
// for a permanent reason: it doubles up to maxPermanentReconnectDelay.
func (s *Subscription) permanentSchedule() retrypolicy.Policy {
	return retrypolicy.Exponential(1, s.reconnectDelay, max(maxPermanentReconnectDelay, s.reconnectDelay))
}

// Queue returns the queue the subscription consumes.
func (s *Subscription) Queue() string { return s.queue }

func (s *Subscription) streamConfig() messaging.StreamConfig {
	return messaging.StreamConfig{
		StreamName:        s.queue,
		ConsumerName:      s.name,
		Topics:            append([]string(nil), s.topics...),
		EstablishTopology: s.establishTopology,
		Replication:       s.replication,
		DeadLetters:       s.deadLetters,
		BufferCapacity:    s.bufferCapacity,
		BatchCapacity:     s.batchCapacity,
		Bindings:          append([]messaging.StreamBinding(nil), s.bindings...),
		QueueType:         s.queueType,
		QueueArguments:    maps.Clone(s.queueArguments),
		ConsumerArguments: maps.Clone(s.consumerArguments),
	}
}

// Bindings adds bindings declared (with their exchanges) each time the stream
// opens, when EstablishTopology is on, beside the fanout shorthand of Topics.
// A binding that routes by key and names no Kind declares a topic exchange,
// as the AceMQ family declares a key-routed topic:
//
//	streaming.SubscriptionOptions.Bindings(messaging.StreamBinding{Exchange: "orders", Key: "order.*"})
//
// Give Kind for a direct or headers exchange (or a key-less binding to a topic
// one). An exchange that already exists as another kind is used as it is, with
// a WARN, and the queue is not bound to it (the key would mean something else
// there): bind it yourself, or name its kind. A binding deleted while the
// service runs is restored at the next reconnect. Default: none.
func (SubscriptionOptionSet) Bindings(bindings ...messaging.StreamBinding) SubscriptionOption {
	return func(c *subscriptionConfig) { c.bindings = append(c.bindings, bindings...) }
}

// QueueType declares the queue of this type (classic, quorum or stream).
// Default: empty, which follows StreamReplication (classic, or quorum).
func (SubscriptionOptionSet) QueueType(queueType messaging.QueueType) SubscriptionOption {
	return func(c *subscriptionConfig) { c.queueType = queueType }
}

// QueueArguments are declared on the queue besides its type and dead-letter
// arguments: x-single-active-consumer, x-max-length, x-message-ttl, ...
// Default: none.
func (SubscriptionOptionSet) QueueArguments(arguments map[string]any) SubscriptionOption {
	return func(c *subscriptionConfig) { c.queueArguments = maps.Clone(arguments) }
}

// ConsumerArguments are passed to the consume call: x-priority, or
// x-stream-offset on a stream queue (patterns/streams sets it for you).
// Default: none.
func (SubscriptionOptionSet) ConsumerArguments(arguments map[string]any) SubscriptionOption {
	return func(c *subscriptionConfig) { c.consumerArguments = maps.Clone(arguments) }
}

// Name sets the consumer name reported to the broker. Default: the queue's
// name.
func (SubscriptionOptionSet) Name(name string) SubscriptionOption {
	return func(c *subscriptionConfig) { c.name = name }
}

// Topics sets the exchanges the queue is bound to for everything published
// there: each a durable fanout exchange, as smarty/messaging v4 declares
// them (bound with "#" when a keyed binding makes it a topic exchange).
// Default: none.
func (SubscriptionOptionSet) Topics(topics ...string) SubscriptionOption {
	return func(c *subscriptionConfig) { c.topics = append([]string(nil), topics...) }
}

// AddWorkers adds one worker goroutine per handler; all share one stream.
// Default: none, and a subscription needs at least one.
func (SubscriptionOptionSet) AddWorkers(handlers ...messaging.Handler) SubscriptionOption {
	return func(c *subscriptionConfig) {
		for _, handler := range handlers {
			if handler != nil {
				c.workers = append(c.workers, handler)
			}
		}
	}
}

// BufferCapacity sets the deliveries prefetched into local memory (the broker
// prefetch). Set 1 for strict one-at-a-time delivery. Default: 256, fast and
// bounded (zero means the default).
func (SubscriptionOptionSet) BufferCapacity(capacity uint16) SubscriptionOption {
	return func(c *subscriptionConfig) { c.bufferCapacity = capacity }
}

// BatchCapacity sets the largest batch handed to Handle; batches never wait
// to fill. Default: 1 (zero means the default).
func (SubscriptionOptionSet) BatchCapacity(capacity uint16) SubscriptionOption {
	return func(c *subscriptionConfig) { c.batchCapacity = capacity }
}

// FullThrottle sets both capacities to their maximum, 65535. Default: off.
func (SubscriptionOptionSet) FullThrottle() SubscriptionOption {
	return func(c *subscriptionConfig) {
		c.bufferCapacity = math.MaxUint16
		c.batchCapacity = math.MaxUint16
	}
}

// EstablishTopology declares the queue, its topics and bindings on connect.
// Default: true.
func (SubscriptionOptionSet) EstablishTopology(establish bool) SubscriptionOption {
	return func(c *subscriptionConfig) { c.establishTopology = establish }
}

// StreamReplication declares the queue as a quorum queue. Default: false.
func (SubscriptionOptionSet) StreamReplication(replicate bool) SubscriptionOption {
	return func(c *subscriptionConfig) { c.replication = replicate }
}

// DeadLetters declares the settlement topology (acemq.dlx, {queue}.dlq,
// {queue}.parked) when the stream opens, so that set-aside messages always
// have somewhere to go. Default: true.
func (SubscriptionOptionSet) DeadLetters(declare bool) SubscriptionOption {
	return func(c *subscriptionConfig) { c.deadLetters = declare }
}

// FullDeliveryToHandler hands messaging.Delivery values to handlers instead
// of Delivery.Message, for a handler that reads the envelope. Default: false
// (the envelopes travel in the context: messaging.DeliveriesFrom).
func (SubscriptionOptionSet) FullDeliveryToHandler(full bool) SubscriptionOption {
	return func(c *subscriptionConfig) { c.fullDelivery = full }
}

// Settlement configures the runtime's settlement of this subscription: the
// handlers/deadletter decorator the runtime puts around every worker, which
// parks what does not decode, dead-letters a message that still fails once
// the handler's stack gave up on it, and carries out messaging.Reject, Park,
// Retry and InProgress. It takes deadletter's options (Policy, Monitor,
// Logger, RefuseRetry, PublishTimeout); the options of several calls add up,
// a later one winning. State the settlement here, so the service's wiring
// shows it, and wrap no settlement of your own around a worker. The
// settlement publishes through one batch.Writer shared by the consumer's
// subscriptions, over the connector the consumer reads from. Default:
// deadletter's defaults with the consumer's logger: undecodable messages
// parked, a message that still fails alone dead-lettered ("the handler
// failed: ..."), Retry bounded by retrypolicy.Default.
func (SubscriptionOptionSet) Settlement(options ...deadletter.Option) SubscriptionOption {
	return func(c *subscriptionConfig) { c.settlement = append(c.settlement, options...) }
}

// RetryPolicy is Settlement(deadletter.Options.Policy(policy)): the retry
// budget the runtime's settlement applies, its attempts named in the reason
// of a dead-lettered message and bounding messaging.Retry. Give it the same
// value as retry.Options.Policy. Default: retrypolicy.Default, and a reason
// that does not count attempts ("the handler failed: ...").
func (SubscriptionOptionSet) RetryPolicy(policy retrypolicy.Policy) SubscriptionOption {
	return func(c *subscriptionConfig) { c.settlement = append(c.settlement, deadletter.Options.Policy(policy)) }
}

// RefuseRetry is Settlement(deadletter.Options.RefuseRetry(why)): the
// runtime's settlement parks a delivery a handler asks to Retry or hold
// InProgress, with the reason "this consumer does not retry (<why>)", for a
// queue whose messages cannot be taken back. Default: empty, they are
// accepted.
func (SubscriptionOptionSet) RefuseRetry(why string) SubscriptionOption {
	return func(c *subscriptionConfig) { c.settlement = append(c.settlement, deadletter.Options.RefuseRetry(why)) }
}

// ReconnectDelay sets the pause before reopening a stream after it ends.
// Consecutive failed sessions double it (jittered by ±20 %) up to 2 s, or the
// delay itself when that is larger, so a consumer is back within about two
// seconds of its broker; a stream that cannot open for a reason waiting does
// not fix (a missing queue, refused access: messaging.IsPermanent) doubles it
// up to 30 s instead. A healthy session starts it again from the delay.
// Default: 1 s (zero or negative means the default).
func (SubscriptionOptionSet) ReconnectDelay(delay time.Duration) SubscriptionOption {
	return func(c *subscriptionConfig) { c.reconnectDelay = delay }
}

// ShutdownStrategy sets how workers conclude on Close and how long they have
// before their context is cancelled; ShutdownStrategyImmediate has no
// timeout. Default: ShutdownStrategyDrain, 5 s (zero or negative means 5 s).
func (SubscriptionOptionSet) ShutdownStrategy(strategy Strategy, timeout time.Duration) SubscriptionOption {
	return func(c *subscriptionConfig) {
		c.strategy = strategy
		c.shutdownTimeout = timeout
	}
}
