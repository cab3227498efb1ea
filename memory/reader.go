package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// reader opens streams on its connection. Its state is guarded by the broker's lock.
type reader struct {
	conn    *connection
	closed  bool
	streams map[*stream]struct{}
}

// Stream declares the topology the config asks for, then consumes the queue it
// names with a prefetch of config.BufferCapacity (at least 1).
func (r *reader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b := r.conn.broker
	var warnings []string
	defer func() { // after the unlock below
		for _, warning := range warnings {
			b.config.logger.Warn(warning)
		}
	}()
	b.mu.Lock()
	defer b.unlock()
	if r.closed {
		return nil, closedError("reader")
	}
	if err := r.conn.usableLocked(); err != nil {
		return nil, err
	}
	if config.StreamName == "" {
		return nil, fmt.Errorf("memory: the stream config names no queue; set StreamConfig.StreamName")
	}
	warnings, err := r.establishLocked(config)
	if err != nil {
		return nil, fmt.Errorf("memory: could not establish the topology of stream %q: %w", config.StreamName, err)
	}
	q, ok := b.queues[config.StreamName]
	if !ok {
		return nil, fmt.Errorf("memory: could not consume: %w", notFound("no queue %q in vhost '/'; declare it or set EstablishTopology", config.StreamName))
	}
	if q.options.Exclusive && q.owner != nil && q.owner != r.conn {
		return nil, fmt.Errorf("memory: could not consume: %w", resourceLocked("cannot obtain exclusive access to locked queue %q; it is in use by another connection", q.name))
	}
	if q.options.Arguments["x-queue-type"] == "stream" {
		return nil, fmt.Errorf("memory: queue %q is a stream (x-queue-type=stream), and the in-memory broker does not implement streams; test stream consumers against RabbitMQ", q.name)
	}
	prefetch := int(config.BufferCapacity)
	if prefetch < 1 {
		prefetch = 1
	}
	s := &stream{broker: b, reader: r, queue: q, prefetch: prefetch, poll: config.Poll, unacked: map[uint64]*message{}}
	if !s.poll { // basic.get is no consumer
		q.streams++
		q.consumed = true
	}
	r.streams[s] = struct{}{}
	return s, nil
}

// establishLocked declares what the transport declares for a stream
// (wire.TopologyOf, in its order). As on RabbitMQ, a queue or exchange that
// exists with other properties is used as it is, with a warning naming the
// difference, and nothing is bound to an exchange whose declaration was
// refused.
func (r *reader) establishLocked(config messaging.StreamConfig) ([]string, error) {
	steps, err := wire.TopologyOf(config)
	if err != nil {
		return nil, err
	}
	d := &streamDeclarer{broker: r.conn.broker, conn: r.conn}
	err = steps.Declare(d)
	return d.warnings, err
}

// streamDeclarer runs a stream's topology on the broker, whose lock the
// caller holds, gathering the warnings RabbitMQ's transport would log.
type streamDeclarer struct {
	broker   *Broker
	conn     *connection
	warnings []string
}

// Exchange declares x, tolerating one that exists with other properties.
func (d *streamDeclarer) Exchange(x messaging.Exchange, unbound string) (bool, error) {
	return d.tolerate(fmt.Sprintf("declare exchange %q", x.Name), unbound,
		d.broker.declareExchangeWithLocked(exchangeOf(x)))
}

// Queue declares q, tolerating one that exists with other properties.
func (d *streamDeclarer) Queue(q messaging.Queue) error {
	_, err := d.tolerate(fmt.Sprintf("declare queue %q", q.Name), "", d.broker.declareQueueLocked(q.Name, queueOptions(q), d.conn))
	return err
}

// Bind binds a queue to an exchange.
func (d *streamDeclarer) Bind(b messaging.Binding) error {
	return d.broker.bindWithLocked(b.Queue, b.Exchange, b.Key, b.Arguments, d.conn)
}

// tolerate turns a refusal of what as differing from what exists into a
// warning and false.
func (d *streamDeclarer) tolerate(what, consequence string, err error) (bool, error) {
	var refused *messaging.BrokerError
	if errors.Is(err, messaging.ErrPreconditionFailed) && errors.As(err, &refused) {
		d.warnings = append(d.warnings, fmt.Sprintf("AMQP %s: it already exists with other properties, so it is used as it is%s (broker: %s)", what, consequence, refused.Text))
		return false, nil
	}
	return err == nil, err
}

// Close closes the reader's streams, requeueing what they had not acknowledged.
func (r *reader) Close() error {
	b := r.conn.broker
	b.mu.Lock()
	defer b.unlock()
	r.closeLocked(closedError("reader"))
	delete(r.conn.readers, r)
	return nil
}

func (r *reader) closeLocked(cause error) {
	if r.closed {
		return
	}
	r.closed = true
	for s := range r.streams {
		s.closeLocked(cause)
	}
}
