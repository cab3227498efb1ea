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

// establishLocked declares what the transport declares for a stream: the
// exchange of every binding (config.StreamBindings: a durable fanout per
// topic, a topic exchange for a binding that routes by key, others of their
// kinds), the durable queue (messaging.DeclaredQueue; quorum with
// Replication, exclusive with ExclusiveStream, and with DeadLetters the
// arguments x-dead-letter-exchange=acemq.dlx and
// x-dead-letter-routing-key={queue}.dlq) bound to each under its key, and with
// DeadLetters the acemq.dlx direct exchange and the {q}.dlq and {q}.parked
// classic queues bound to it on their own names. As on RabbitMQ, a queue or
// exchange that exists with other properties is used as it is, with a
// warning naming the difference, and nothing is bound to an exchange whose
// declaration was refused.
func (r *reader) establishLocked(config messaging.StreamConfig) ([]string, error) {
	b, name := r.conn.broker, config.StreamName
	var warnings []string
	tolerate := func(what, consequence string, err error) (bool, error) {
		if errors.Is(err, messaging.ErrPreconditionFailed) {
			var refused *messaging.BrokerError
			errors.As(err, &refused)
			warnings = append(warnings, fmt.Sprintf("AMQP %s: it already exists with other properties, so it is used as it is%s (broker: %s)", what, consequence, refused.Text))
			return false, nil
		}
		return err == nil, err
	}
	if config.EstablishTopology {
		source, err := config.SourceQueue()
		if err != nil {
			return warnings, err
		}
		if source, err = messaging.DeclaredQueue(source); err != nil {
			return warnings, err
		}
		var bindable []messaging.StreamBinding
		for _, binding := range config.StreamBindings() {
			x := messaging.Exchange{Name: binding.Exchange, Kind: binding.Kind, Durable: true}
			if err := x.Validate(); err != nil {
				return warnings, err
			}
			declared, err := tolerate(fmt.Sprintf("declare exchange %q", x.Name), fmt.Sprintf(", and queue %q is not bound to it with key %q; bind it yourself if nothing routes the messages there", name, binding.Key),
				b.declareExchangeLocked(x.Name, string(x.Kind), true))
			if err != nil {
				return warnings, err
			}
			if declared {
				bindable = append(bindable, binding)
			}
		}
		if _, err := tolerate(fmt.Sprintf("declare queue %q", name), "", b.declareQueueLocked(name, queueOptions(source), r.conn)); err != nil {
			return warnings, err
		}
		for _, binding := range bindable {
			if err := b.bindWithLocked(name, binding.Exchange, binding.Key, binding.Arguments, r.conn); err != nil {
				return warnings, err
			}
		}
	}
	if config.DeadLetters {
		exchangeDeclared, err := tolerate(fmt.Sprintf("declare exchange %q", wire.DeadLetterExchange), ", and nothing is bound to it",
			b.declareExchangeLocked(wire.DeadLetterExchange, KindDirect, true))
		if err != nil {
			return warnings, err
		}
		for _, target := range []string{wire.DeadLetterQueue(name), wire.ParkedQueue(name)} {
			if _, err := tolerate(fmt.Sprintf("declare queue %q", target), "", b.declareQueueLocked(target, QueueOptions{Durable: true}, r.conn)); err != nil {
				return warnings, err
			}
			if !exchangeDeclared {
				continue
			}
			if err := b.bindLocked(target, wire.DeadLetterExchange, target, r.conn); err != nil {
				return warnings, err
			}
		}
	}
	return warnings, nil
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
