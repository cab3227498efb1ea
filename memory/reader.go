package memory

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
)

// Names of the settlement topology a stream declares with DeadLetters.
const (
	DeadLetterExchange = "acemq.dlx"
	DeadLetterSuffix   = ".dlq"
	ParkedSuffix       = ".parked"
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
	if err := r.establishLocked(config); err != nil {
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
	s := &stream{broker: b, reader: r, queue: q, prefetch: prefetch, unacked: map[uint64]*message{}}
	q.streams++
	q.consumed = true
	r.streams[s] = struct{}{}
	return s, nil
}

// establishLocked declares what the transport declares for a stream: a durable
// fanout exchange per topic, the durable queue (quorum with Replication,
// exclusive with ExclusiveStream) bound to each with key "", and with
// DeadLetters the acemq.dlx direct exchange and the {q}.dlq and {q}.parked
// classic queues bound to it on their own names.
func (r *reader) establishLocked(config messaging.StreamConfig) error {
	b, name := r.conn.broker, config.StreamName
	if config.EstablishTopology {
		for _, topic := range config.Topics {
			if err := b.declareExchangeLocked(topic, KindFanout, true); err != nil {
				return err
			}
		}
		options := QueueOptions{Durable: true, Exclusive: config.ExclusiveStream}
		if config.Replication {
			options.Arguments = map[string]any{"x-queue-type": "quorum"}
		}
		if err := b.declareQueueLocked(name, options, r.conn); err != nil {
			return err
		}
		for _, topic := range config.Topics {
			if err := b.bindLocked(name, topic, "", r.conn); err != nil {
				return err
			}
		}
	}
	if config.DeadLetters {
		if err := b.declareExchangeLocked(DeadLetterExchange, KindDirect, true); err != nil {
			return err
		}
		for _, target := range []string{name + DeadLetterSuffix, name + ParkedSuffix} {
			if err := b.declareQueueLocked(target, QueueOptions{Durable: true}, r.conn); err != nil {
				return err
			}
			if err := b.bindLocked(target, DeadLetterExchange, target, r.conn); err != nil {
				return err
			}
		}
	}
	return nil
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
