package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

// stream is one consumer on its own channel. Read is safe for concurrent
// readers: receiving a delivery and registering its tag as awaiting
// acknowledgement are one step, so a multiple-ack never covers a delivery that no
// Read has returned. Acknowledge covers only delivered tags: those a Read returned
// and that are not acknowledged yet.
type stream struct {
	conn       *connection
	ch         adapter.Channel
	queue      string
	tag        string
	deliveries <-chan amqp.Delivery
	closes     <-chan *amqp.Error
	forget     func(*stream)
	poll       bool // read with basic.get; no consumer, no deliveries channel
	// streamQueue is set for a consumer of a RabbitMQ stream queue, which
	// refuses basic.nack by closing the whole connection: Requeue refuses
	// it here instead.
	streamQueue bool

	// turn is a mutex that a waiting Read can give up when its ctx ends: the
	// Read holding it receives a delivery and registers its tag as one step. It
	// is held while a Read waits, so it is never taken under mu.
	turn chan struct{}

	mu          sync.Mutex // serialises acknowledgements; guards the fields below
	outstanding map[uint64]struct{}
	closed      bool
	endReason   string
	endRefusal  error // the broker's refusal that ended the stream, or nil
}

// Read waits for the next delivery and decodes it into delivery. It returns an
// error when ctx ends or the stream ends (its channel or connection closed).
//
// Concurrent Reads are served one at a time: a delivery is registered as awaiting
// acknowledgement before the next Read can receive, so an Acknowledge that sees a
// later tag outstanding also sees every earlier one.
func (s *stream) Read(ctx context.Context, delivery *messaging.Delivery) error {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	if s.poll {
		return s.get(ctx, delivery)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case raw, ok := <-s.deliveries:
		if !ok {
			return s.endedError()
		}
		s.mu.Lock()
		s.outstanding[raw.DeliveryTag] = struct{}{}
		s.mu.Unlock()
		decodeDelivery(raw, s.queue, delivery)
		return nil
	}
}

// get reads one message with basic.get, bounded by the broker timeout; an
// empty queue is messaging.ErrQueueEmpty at once.
func (s *stream) get(ctx context.Context, delivery *messaging.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return s.endedError()
	}
	var (
		raw amqp.Delivery
		ok  bool
	)
	err := s.conn.call(fmt.Sprintf("get from queue %q", s.queue), ErrConnectTimeout, func() (err error) {
		raw, ok, err = s.ch.Get(s.queue, false)
		return err
	})
	switch {
	case errors.Is(err, messaging.ErrClosed):
		return s.endedError()
	case err != nil:
		return fmt.Errorf("read from stream %q: %w", s.queue, err)
	case !ok:
		return fmt.Errorf("stream %q: %w", s.queue, messaging.ErrQueueEmpty)
	}
	s.mu.Lock()
	s.outstanding[raw.DeliveryTag] = struct{}{}
	s.mu.Unlock()
	decodeDelivery(raw, s.queue, delivery)
	return nil
}

func (s *stream) endedError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("stream %q was closed: %w", s.queue, messaging.ErrClosed)
	}
	if s.endReason == "" {
		s.endReason = "the channel was closed"
		select {
		case err := <-s.closes:
			if err != nil {
				s.endReason = err.Error()
				if refused := refusal(fmt.Sprintf("consume queue %q", s.queue), err, false); refused != error(err) {
					s.endRefusal = refused
				}
			}
		default:
			if err := s.conn.usable(); err != nil {
				s.endReason = err.Error()
			}
		}
	}
	if s.endRefusal != nil {
		return fmt.Errorf("stream %q ended (%w); open a new stream, and expect the broker to redeliver what was not acknowledged: %w", s.queue, s.endRefusal, messaging.ErrClosed)
	}
	return fmt.Errorf("stream %q ended (%s); open a new stream, and expect the broker to redeliver what was not acknowledged: %w", s.queue, s.endReason, messaging.ErrClosed)
}

// Acknowledge acks the deliveries: with one multiple-ack when they cover every
// unacknowledged delivery up to the latest of them, one by one otherwise. It is
// bounded by the broker timeout (past it the connection is severed and the error
// wraps ErrAcknowledgeTimeout).
func (s *stream) Acknowledge(ctx context.Context, deliveries ...messaging.Delivery) error {
	if len(deliveries) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("acknowledge %d delivery(ies) from stream %q: %w", len(deliveries), s.queue, err)
	}
	tags := make([]uint64, 0, len(deliveries))
	for _, d := range deliveries {
		tags = append(tags, d.DeliveryID)
	}
	slices.Sort(tags)
	tags = slices.Compact(tags)

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tag := range tags {
		if _, ok := s.outstanding[tag]; !ok {
			return fmt.Errorf("delivery %d is not awaiting acknowledgement on stream %q (acknowledged already, or read from another stream); nothing was acknowledged", tag, s.queue)
		}
	}
	last := tags[len(tags)-1]
	covered := 0
	for tag := range s.outstanding {
		if tag <= last {
			covered++
		}
	}

	var err error
	if covered == len(tags) && len(tags) > 1 {
		err = s.conn.call("acknowledgement", ErrAcknowledgeTimeout, func() error { return s.ch.Ack(last, true) })
		if err == nil {
			for _, tag := range tags {
				delete(s.outstanding, tag)
			}
		}
	} else {
		err = s.conn.call("acknowledgement", ErrAcknowledgeTimeout, func() error {
			for _, tag := range tags {
				if err := s.ch.Ack(tag, false); err != nil {
					return err
				}
				delete(s.outstanding, tag)
			}
			return nil
		})
	}
	if err != nil {
		return fmt.Errorf("acknowledge %d delivery(ies) from stream %q (the broker will redeliver what was not acknowledged): %w", len(tags), s.queue, err)
	}
	return nil
}

// ErrRequeueOnStreamQueue is Requeue's answer on a consumer of a RabbitMQ
// stream queue: a stream keeps every message and has no way to return one,
// and the broker answers basic.nack on it by closing the whole connection (540
// NOT_IMPLEMENTED), so the request is refused before anything is sent. The
// delivery stays unacknowledged.
var ErrRequeueOnStreamQueue = errors.New("rabbitmq: a stream queue cannot return one delivery (the broker would close the connection for it); nothing was sent")

// Requeue returns one delivery to its queue (basic.nack of its tag, not
// multiple, with requeue) while the other deliveries the stream holds stay
// unacknowledged and the stream goes on; the broker delivers it again marked
// redelivered. It is bounded by the broker timeout like Acknowledge (past it
// the connection is severed and the error wraps ErrAcknowledgeTimeout), and
// fails with messaging.ErrClosed once the stream has closed.
func (s *stream) Requeue(ctx context.Context, delivery messaging.Delivery) error {
	tag := delivery.DeliveryID
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("requeue delivery %d on stream %q: %w", tag, s.queue, err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("requeue delivery %d: %w", tag, s.endedError())
	}
	defer s.mu.Unlock()
	if _, ok := s.outstanding[tag]; !ok {
		return fmt.Errorf("delivery %d is not awaiting acknowledgement on stream %q (settled already, or read from another stream); nothing was requeued", tag, s.queue)
	}
	if s.streamQueue {
		return fmt.Errorf("requeue delivery %d on %q: %w", tag, s.queue, ErrRequeueOnStreamQueue)
	}
	err := s.conn.call("requeue", ErrAcknowledgeTimeout, func() error { return s.ch.Nack(tag, false, true) })
	if err != nil {
		return fmt.Errorf("requeue delivery %d on stream %q (the broker will redeliver it when the stream ends): %w", tag, s.queue, err)
	}
	delete(s.outstanding, tag)
	return nil
}

// Close cancels the consumer and closes the channel, each within the broker
// timeout. Deliveries not acknowledged return to the queue.
func (s *stream) Close() error {
	if !markClosed(&s.mu, &s.closed) {
		return nil
	}
	if s.forget != nil {
		s.forget(s)
	}

	var err error
	if !s.poll {
		err = s.conn.call("consumer cancel", ErrCloseTimeout, func() error { return s.ch.Cancel(s.tag, false) })
	}
	if errors.Is(err, messaging.ErrClosed) { // the channel is gone, and its consumer with it
		err = nil
	}
	if errors.Is(err, ErrCloseTimeout) {
		return fmt.Errorf("close stream %q: %w", s.queue, err)
	}
	if closeErr := s.conn.closeChannel(s.ch); closeErr != nil {
		err = errors.Join(err, closeErr)
	}
	if err != nil {
		return fmt.Errorf("close stream %q: %w", s.queue, err)
	}
	return nil
}
