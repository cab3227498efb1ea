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

// reader opens streams. It holds one channel from the start, which its first
// stream takes over; each further stream opens a channel of its own.
type reader struct {
	conn *connection
	// onClose, when set, tells the handle that opened it that it closed.
	onClose func()

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
	s, err := r.start(ctx, &ch, config)
	if err != nil {
		if ch != nil {
			_ = r.conn.closeChannel(ch)
		}
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

// start declares the topology and consumes; it leaves in *channel the channel
// it ends on (a declaration refused as differing replaces it).
func (r *reader) start(ctx context.Context, channel *adapter.Channel, config messaging.StreamConfig) (*stream, error) {
	queue := config.StreamName
	if err := r.conn.declareStreamTopology(ctx, channel, config); err != nil {
		return nil, err
	}
	if *channel == nil {
		var err error
		if *channel, err = r.conn.openChannel(ctx); err != nil {
			return nil, err
		}
	}
	ch := *channel
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	step := func(what string, f func() error) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := r.conn.call(what, ErrConnectTimeout, f); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}

	s := &stream{
		conn:        r.conn,
		ch:          ch,
		queue:       queue,
		closes:      closes,
		poll:        config.Poll,
		streamQueue: consumesStreamQueue(config),
		turn:        make(chan struct{}, 1),
		outstanding: map[uint64]struct{}{},
	}
	if config.Poll {
		return s, nil // basic.get needs neither prefetch nor a consumer
	}
	prefetch := max(int(config.BufferCapacity), 1)
	if err := step(fmt.Sprintf("set prefetch %d", prefetch), func() error {
		return ch.Qos(prefetch, 0, false)
	}); err != nil {
		return nil, err
	}
	s.tag = consumerTag(config)
	if err := step(fmt.Sprintf("consume queue %q", queue), func() (err error) {
		s.deliveries, err = ch.Consume(queue, s.tag, false, false, false, false, table(config.ConsumerArguments))
		return err
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// consumerTag is ConsumerName (the queue's name when empty) with a unique
// suffix, or as it is with ExactConsumerTag.
func consumerTag(config messaging.StreamConfig) string {
	name := config.ConsumerName
	if name == "" {
		name = config.StreamName
	}
	if config.ExactConsumerTag {
		return name
	}
	return name + "-" + messaging.NewID()[:8]
}

// Close closes every stream the reader opened and its unused channel.
func (r *reader) Close() error {
	if !markClosed(&r.mu, &r.closed) {
		return nil
	}
	r.mu.Lock()
	onClose := r.onClose
	spare := r.spare
	r.spare = nil
	streams := make([]*stream, 0, len(r.streams))
	for s := range r.streams {
		streams = append(streams, s)
	}
	r.mu.Unlock()
	if onClose != nil {
		onClose()
	}

	var errs []error
	for _, s := range streams {
		errs = append(errs, s.Close())
	}
	if spare != nil {
		errs = append(errs, r.conn.closeChannel(spare))
	}
	return errors.Join(errs...)
}

// consumesStreamQueue reports whether config consumes a RabbitMQ stream queue:
// one declared of that type, or a consumer that names a stream offset.
func consumesStreamQueue(config messaging.StreamConfig) bool {
	if config.QueueType == messaging.QueueStream {
		return true
	}
	_, offset := config.ConsumerArguments["x-stream-offset"]
	return offset
}
