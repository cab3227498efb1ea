// Package memory is an in-memory transport with RabbitMQ's routing semantics,
// for testing handlers and decorators without a broker. It is no kinder than
// RabbitMQ: direct, topic and fanout exchanges route as the broker does; a
// mandatory message that reaches no queue fails with messaging.ErrUnroutable;
// redeclaring with different properties fails with PRECONDITION_FAILED;
// consuming or binding what was never declared fails with NOT_FOUND; and a
// delivery left unacknowledged when its stream or connection closes comes back
// at the front of its queue, marked Redelivered.
//
// It does not persist anything, cluster, enforce flow control, or offer
// streams; a durable queue is durable only for the life of the Broker.
// Messages expire (per-message Expiration and the queue's x-message-ttl) when
// they reach the head of their queue, as on RabbitMQ, judged by time.Now
// whenever the broker is used or a waiting reader's timer says one is due
// (in a testing/synctest bubble, by the bubble's clock); an expired message goes to the queue's
// x-dead-letter-exchange when it has one (without an x-death header), else it
// is dropped.
package memory

import (
	"context"
	"sync"

	"github.com/warrenmq/messaging"
)

// Broker is one in-memory broker: its exchanges, queues and the connections
// opened to it. It implements messaging.Connector and offers helpers that
// arrange and inspect its state in tests. The zero value is not usable; call New.
type Broker struct {
	config config

	mu          sync.Mutex
	closed      bool
	exchanges   map[string]*exchange
	queues      map[string]*queue
	connections map[*connection]struct{}
	pulls       uint64
	waiting     int // Reads blocked waiting for a delivery or capacity
	events      []func(Monitor)
	// expiries is notified when a message that expires is enqueued: a Read
	// waiting with a timer for the earliest expiry it knew of must look
	// again, since the new message may expire sooner and be dead-lettered
	// into its queue (a TTL ladder, a retry rung).
	expiries signal
}

var _ messaging.Connector = (*Broker)(nil)

// New returns an empty broker with the predeclared exchanges amq.direct,
// amq.fanout and amq.topic, and the default exchange "" that routes a message
// to the queue named by its routing key.
func New(options ...Option) *Broker {
	b := &Broker{
		config:      newConfig(options),
		exchanges:   map[string]*exchange{},
		queues:      map[string]*queue{},
		connections: map[*connection]struct{}{},
	}
	for _, x := range predeclared {
		b.exchanges[x.name] = &exchange{name: x.name, kind: x.kind, durable: x.durable}
	}
	return b
}

// Connect opens a connection. It fails with messaging.ErrClosed after Close.
func (b *Broker) Connect(ctx context.Context) (messaging.Connection, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.unlock()
	if b.closed {
		return nil, closedError("broker")
	}
	c := &connection{broker: b, readers: map[*reader]struct{}{}, writers: map[*writer]struct{}{}}
	b.connections[c] = struct{}{}
	return c, nil
}

// Close closes every open connection (requeueing what their streams had not
// acknowledged) and refuses new ones. The test helpers keep working, so a test
// can inspect the queues after closing.
func (b *Broker) Close() error {
	b.mu.Lock()
	defer b.unlock()
	b.closed = true
	for c := range b.connections {
		c.closeLocked()
	}
	return nil
}

// DeclareExchange declares an exchange of kind "direct", "topic" or "fanout",
// or checks that an existing one has the same kind and durability.
func (b *Broker) DeclareExchange(name, kind string, durable bool) error {
	b.mu.Lock()
	defer b.unlock()
	return b.declareExchangeLocked(name, kind, durable)
}

// DeclareQueue declares a queue, or checks that an existing one was declared
// with the same options. An exclusive queue declared here belongs to no
// connection and lives as long as the broker.
func (b *Broker) DeclareQueue(name string, options QueueOptions) error {
	b.mu.Lock()
	defer b.unlock()
	return b.declareQueueLocked(name, options, nil)
}

// Bind routes messages published to exchange with a matching key to queue.
// Both must have been declared.
func (b *Broker) Bind(queue, exchange, key string) error {
	b.mu.Lock()
	defer b.unlock()
	return b.bindLocked(queue, exchange, key, nil)
}

// DeleteQueue deletes a queue, its messages and its bindings; streams
// consuming it end. Deleting a queue that does not exist succeeds, as on RabbitMQ.
func (b *Broker) DeleteQueue(name string) error {
	b.mu.Lock()
	defer b.unlock()
	if q, ok := b.queues[name]; ok {
		b.deleteQueueLocked(q)
	}
	return nil
}

// DeleteExchange deletes an exchange and its bindings. Deleting one that does
// not exist succeeds; the default and amq.* exchanges cannot be deleted.
func (b *Broker) DeleteExchange(name string) error {
	if name == "" {
		return accessRefused("operation not permitted on the default exchange")
	}
	b.mu.Lock()
	defer b.unlock()
	for _, x := range predeclared {
		if x.name == name {
			return accessRefused("exchange %q is predeclared and cannot be deleted", name)
		}
	}
	delete(b.exchanges, name)
	return nil
}

// Publish publishes one dispatch as a Writer would, filling the same envelope
// defaults. It returns the NOT_FOUND error for an undeclared exchange and,
// for a mandatory dispatch that reached no queue, an error wrapping
// messaging.ErrUnroutable.
func (b *Broker) Publish(ctx context.Context, dispatch messaging.Dispatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.unlock()
	m, err := b.messageOf(dispatch)
	if err != nil {
		return err
	}
	b.sweepLocked()
	_, err = b.publishLocked(m, dispatch.Mandatory)
	return err
}

// Pull takes the message at the front of queue, as basic.get with automatic
// acknowledgement does. It returns false when the queue is empty or missing.
func (b *Broker) Pull(queue string) (messaging.Delivery, bool) {
	b.mu.Lock()
	defer b.unlock()
	b.sweepLocked()
	q, ok := b.queues[queue]
	if !ok {
		return messaging.Delivery{}, false
	}
	m := q.pop()
	if m == nil {
		return messaging.Delivery{}, false
	}
	b.pulls++
	b.emit(func(mon Monitor) { mon.MessageDelivered(queue) })
	return m.delivery(queue, b.pulls), true
}

// MessageCount returns how many messages in queue are ready for delivery (not
// counting those delivered and unacknowledged), or 0 when it does not exist.
func (b *Broker) MessageCount(queue string) int {
	b.mu.Lock()
	defer b.unlock()
	b.sweepLocked()
	if q, ok := b.queues[queue]; ok {
		return len(q.messages)
	}
	return 0
}

// Expire applies message expiry now: expired messages at the head of their
// queues are dropped or dead-lettered, and readers waiting on the queues they
// move to wake. Every broker operation does this, and waiting readers also
// wake by themselves when the next expiry is due; Expire is for a test that
// wants it applied with nothing else touching the broker.
func (b *Broker) Expire() {
	b.mu.Lock()
	defer b.unlock()
	b.sweepLocked()
}

// emit queues a monitor call for when the lock is released.
func (b *Broker) emit(event func(Monitor)) {
	b.events = append(b.events, event)
}

// unlock releases the broker lock, then tells the monitor what happened under it.
func (b *Broker) unlock() {
	events := b.events
	b.events = nil
	b.mu.Unlock()
	for _, event := range events {
		event(b.config.monitor)
	}
}
