package streaming

import (
	"maps"
	"math"
	"time"

	"github.com/warrenmq/messaging"
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
	// defaultBufferCapacity departs from the seed's 1 on purpose: a prefetch of
	// one costs a broker round trip per message (about half the raw client's
	// rate here), while 256 keeps the default within a few percent of it and
	// holds at most 256 unacknowledged deliveries per subscription.
	defaultBufferCapacity = 256
	// defaultReconnectDelay departs from the seed's 5 s on purpose: with a
	// low ceiling on its doubling it brings a consumer back within about two
	// seconds of its broker, where a long outage used to grow the wait to
	// 16 s or more.
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
	queue             string
	name              string
	topics            []string
	workers           []messaging.Handler
	bufferCapacity    uint16
	batchCapacity     uint16
	establishTopology bool
	replication       bool
	deadLetters       bool
	fullDelivery      bool
	policy            retrypolicy.Policy
	refuseRetry       string
	reconnectDelay    time.Duration
	strategy          Strategy
	shutdownTimeout   time.Duration
	bindings          []messaging.StreamBinding
	queueType         messaging.QueueType
	queueArguments    map[string]any
	consumerArguments map[string]any
}

// SubscriptionOptions configures NewSubscription. It is a singleton whose
// methods return options.
var SubscriptionOptions subscriptionSingleton

type subscriptionSingleton struct{}

type subscriptionOption func(*Subscription)

// SubscriptionOption is the type of SubscriptionOptions' values, exported so
// callers can assemble option lists before calling NewSubscription.
type SubscriptionOption = subscriptionOption

// NewSubscription describes a subscription to queue. It needs at least one
// worker (AddWorkers); a subscription without workers never opens its stream.
func NewSubscription(queue string, options ...subscriptionOption) *Subscription {
	s := &Subscription{
		queue:             queue,
		establishTopology: true,
		deadLetters:       true,
		strategy:          ShutdownStrategyDrain,
	}
	for _, apply := range options {
		if apply != nil {
			apply(s)
		}
	}
	if s.bufferCapacity == 0 {
		s.bufferCapacity = defaultBufferCapacity
	}
	if s.batchCapacity == 0 {
		s.batchCapacity = defaultCapacity
	}
	if s.reconnectDelay <= 0 {
		s.reconnectDelay = defaultReconnectDelay
	}
	if s.shutdownTimeout <= 0 {
		s.shutdownTimeout = defaultShutdownTimeout
	}
	return s
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
// opens, when EstablishTopology is on: a direct or topic exchange under a
// key, beside the fanout shorthand of Topics. A binding deleted while the
// service runs is restored at the next reconnect.
func (subscriptionSingleton) Bindings(bindings ...messaging.StreamBinding) subscriptionOption {
	return func(s *Subscription) { s.bindings = append(s.bindings, bindings...) }
}

// QueueType declares the queue of this type (classic, quorum or stream);
// empty follows StreamReplication.
func (subscriptionSingleton) QueueType(queueType messaging.QueueType) subscriptionOption {
	return func(s *Subscription) { s.queueType = queueType }
}

// QueueArguments are declared on the queue besides its type and dead-letter
// arguments: x-single-active-consumer, x-max-length, x-message-ttl, ...
func (subscriptionSingleton) QueueArguments(arguments map[string]any) subscriptionOption {
	return func(s *Subscription) { s.queueArguments = maps.Clone(arguments) }
}

// ConsumerArguments are passed to the consume call: x-priority, or
// x-stream-offset on a stream queue (patterns/streams sets it for you).
func (subscriptionSingleton) ConsumerArguments(arguments map[string]any) subscriptionOption {
	return func(s *Subscription) { s.consumerArguments = maps.Clone(arguments) }
}

// Name sets the consumer name reported to the broker.
func (subscriptionSingleton) Name(name string) subscriptionOption {
	return func(s *Subscription) { s.name = name }
}

// Topics sets the exchanges the queue is bound to.
func (subscriptionSingleton) Topics(topics ...string) subscriptionOption {
	return func(s *Subscription) { s.topics = append([]string(nil), topics...) }
}

// AddWorkers adds one worker goroutine per handler; all share one stream.
func (subscriptionSingleton) AddWorkers(handlers ...messaging.Handler) subscriptionOption {
	return func(s *Subscription) {
		for _, handler := range handlers {
			if handler != nil {
				s.workers = append(s.workers, handler)
			}
		}
	}
}

// BufferCapacity sets the deliveries prefetched into local memory (the broker
// prefetch). Zero means the default, 256: fast by default, and bounded. Set 1
// for strict one-at-a-time delivery.
func (subscriptionSingleton) BufferCapacity(capacity uint16) subscriptionOption {
	return func(s *Subscription) { s.bufferCapacity = capacity }
}

// BatchCapacity sets the largest batch handed to Handle. Zero means the
// default, 1. Batches never wait to fill.
func (subscriptionSingleton) BatchCapacity(capacity uint16) subscriptionOption {
	return func(s *Subscription) { s.batchCapacity = capacity }
}

// FullThrottle sets both capacities to their maximum.
func (subscriptionSingleton) FullThrottle() subscriptionOption {
	return func(s *Subscription) {
		s.bufferCapacity = math.MaxUint16
		s.batchCapacity = math.MaxUint16
	}
}

// EstablishTopology declares the queue, its topics and bindings on connect
// (default true).
func (subscriptionSingleton) EstablishTopology(establish bool) subscriptionOption {
	return func(s *Subscription) { s.establishTopology = establish }
}

// StreamReplication declares the queue as a quorum queue (default false).
func (subscriptionSingleton) StreamReplication(replicate bool) subscriptionOption {
	return func(s *Subscription) { s.replication = replicate }
}

// DeadLetters declares the settlement topology (acemq.dlx, {queue}.dlq,
// {queue}.parked) when the stream opens, so that set-aside messages always have
// somewhere to go (default true).
func (subscriptionSingleton) DeadLetters(declare bool) subscriptionOption {
	return func(s *Subscription) { s.deadLetters = declare }
}

// FullDeliveryToHandler hands messaging.Delivery values to handlers instead of
// Delivery.Message (default false): for a handler that reads the envelope or
// settles single deliveries (a handlers/deadletter decorator of its own).
func (subscriptionSingleton) FullDeliveryToHandler(full bool) subscriptionOption {
	return func(s *Subscription) { s.fullDelivery = full }
}

// RetryPolicy states the retry budget the runtime's own settlement applies
// (see Settlement in the package documentation): the attempts it names in the
// reason of a dead-lettered message and the budget of deadletter.Retry. Give
// it the same value as retry.Options.Policy. The zero Policy (the default)
// means retrypolicy.Default, five attempts, and a reason that does not count
// them ("the handler failed: ...").
func (subscriptionSingleton) RetryPolicy(policy retrypolicy.Policy) subscriptionOption {
	return func(s *Subscription) { s.policy = policy }
}

// RefuseRetry makes the runtime's settlement park a delivery a handler asks
// to Retry or hold InProgress, with the reason "this consumer does not retry
// (<why>)", for a queue whose messages cannot be taken back. Empty (the
// default) accepts them.
func (subscriptionSingleton) RefuseRetry(why string) subscriptionOption {
	return func(s *Subscription) { s.refuseRetry = why }
}

// ReconnectDelay sets the pause before reopening a stream after it ends.
// Consecutive failed sessions double it (jittered by ±20 %) up to 2 s, or the
// delay itself when that is larger, so a consumer is back within about two
// seconds of its broker; a stream that cannot open for a reason waiting does
// not fix (a missing queue, refused access: messaging.IsPermanent) doubles it
// up to 30 s instead. A healthy session starts it again from the delay.
// Default: 1 s (zero or negative means the default).
func (subscriptionSingleton) ReconnectDelay(delay time.Duration) subscriptionOption {
	return func(s *Subscription) { s.reconnectDelay = delay }
}

// ShutdownStrategy sets how workers conclude on Close and how long they have
// before their context is cancelled (default Drain, 5 s; zero or negative
// means 5 s). ShutdownStrategyImmediate has no timeout.
func (subscriptionSingleton) ShutdownStrategy(strategy Strategy, timeout time.Duration) subscriptionOption {
	return func(s *Subscription) {
		s.strategy = strategy
		s.shutdownTimeout = timeout
	}
}
