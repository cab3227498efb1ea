package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

// Names of the settlement topology (the AceMQ wire contract).
const (
	deadLetterExchange = "acemq.dlx"
	deadLetterSuffix   = ".dlq"
	parkedSuffix       = ".parked"
)

// reader opens streams. It holds one channel from the start, which its first
// stream takes over; each further stream opens a channel of its own.
type reader struct {
	conn *connection

	mu      sync.Mutex
	closed  bool
	spare   adapter.Channel
	streams map[*stream]struct{}
}

// Reader opens a channel for consuming.
func (c *connection) Reader(ctx context.Context) (messaging.Reader, error) {
	ch, err := c.openChannel(ctx)
	if err != nil {
		return nil, fmt.Errorf("open a reader: %w", err)
	}
	return &reader{conn: c, spare: ch, streams: map[*stream]struct{}{}}, nil
}

// Stream declares the topology config asks for, sets the prefetch and starts a
// consumer with manual acknowledgement.
func (r *reader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	if config.StreamName == "" {
		return nil, errors.New("StreamConfig.StreamName is empty; name the queue to consume")
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("open a stream on a closed reader; open a new reader: %w", messaging.ErrClosed)
	}
	ch := r.spare
	r.spare = nil
	r.mu.Unlock()

	if ch == nil {
		var err error
		if ch, err = r.conn.openChannel(ctx); err != nil {
			return nil, fmt.Errorf("open stream %q: %w", config.StreamName, err)
		}
	}
	s, err := r.start(ctx, ch, config)
	if err != nil {
		_ = r.conn.closeChannel(ch)
		return nil, fmt.Errorf("open stream %q: %w", config.StreamName, err)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = s.Close()
		return nil, fmt.Errorf("the reader closed while stream %q opened: %w", config.StreamName, messaging.ErrClosed)
	}
	r.streams[s] = struct{}{}
	s.forget = r.forget
	return s, nil
}

func (r *reader) forget(s *stream) {
	r.mu.Lock()
	delete(r.streams, s)
	r.mu.Unlock()
}

func (r *reader) start(ctx context.Context, ch adapter.Channel, config messaging.StreamConfig) (*stream, error) {
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	queue := config.StreamName
	step := func(what string, f func() error) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := r.conn.call(what, ErrConnectTimeout, f); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}

	if config.EstablishTopology {
		for _, topic := range config.Topics {
			if err := step(fmt.Sprintf("declare exchange %q", topic), func() error {
				return ch.ExchangeDeclare(topic, amqp.ExchangeFanout, true, false, false, false, nil)
			}); err != nil {
				return nil, err
			}
		}
		var args amqp.Table
		if config.Replication {
			args = amqp.Table{amqp.QueueTypeArg: amqp.QueueTypeQuorum}
		}
		if err := step(fmt.Sprintf("declare queue %q", queue), func() error {
			_, err := ch.QueueDeclare(queue, true, false, config.ExclusiveStream, false, args)
			return err
		}); err != nil {
			return nil, err
		}
		for _, topic := range config.Topics {
			if err := step(fmt.Sprintf("bind queue %q to exchange %q", queue, topic), func() error {
				return ch.QueueBind(queue, "", topic, false, nil)
			}); err != nil {
				return nil, err
			}
		}
	}
	if config.DeadLetters {
		if err := step(fmt.Sprintf("declare exchange %q", deadLetterExchange), func() error {
			return ch.ExchangeDeclare(deadLetterExchange, amqp.ExchangeDirect, true, false, false, false, nil)
		}); err != nil {
			return nil, err
		}
		for _, name := range []string{queue + deadLetterSuffix, queue + parkedSuffix} {
			if err := step(fmt.Sprintf("declare queue %q", name), func() error {
				_, err := ch.QueueDeclare(name, true, false, false, false, nil)
				return err
			}); err != nil {
				return nil, err
			}
			if err := step(fmt.Sprintf("bind queue %q to exchange %q", name, deadLetterExchange), func() error {
				return ch.QueueBind(name, name, deadLetterExchange, false, nil)
			}); err != nil {
				return nil, err
			}
		}
	}

	prefetch := max(int(config.BufferCapacity), 1)
	if err := step(fmt.Sprintf("set prefetch %d", prefetch), func() error {
		return ch.Qos(prefetch, 0, false)
	}); err != nil {
		return nil, err
	}
	name := config.ConsumerName
	if name == "" {
		name = queue
	}
	tag := name + "-" + messaging.NewID()[:8]
	var deliveries <-chan amqp.Delivery
	if err := step(fmt.Sprintf("consume queue %q", queue), func() (err error) {
		deliveries, err = ch.Consume(queue, tag, false, false, false, false, nil)
		return err
	}); err != nil {
		return nil, err
	}
	return &stream{
		conn:        r.conn,
		ch:          ch,
		queue:       queue,
		tag:         tag,
		deliveries:  deliveries,
		closes:      closes,
		turn:        make(chan struct{}, 1),
		outstanding: map[uint64]struct{}{},
	}, nil
}

// Close closes every stream the reader opened and its unused channel.
func (r *reader) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	spare := r.spare
	r.spare = nil
	streams := make([]*stream, 0, len(r.streams))
	for s := range r.streams {
		streams = append(streams, s)
	}
	r.mu.Unlock()

	var errs []error
	for _, s := range streams {
		errs = append(errs, s.Close())
	}
	if spare != nil {
		errs = append(errs, r.conn.closeChannel(spare))
	}
	return errors.Join(errs...)
}
