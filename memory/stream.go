package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/warrenmq/messaging"
)

// stream consumes one queue with a bounded number of unacknowledged
// deliveries. Its state is guarded by the broker's lock.
type stream struct {
	broker   *Broker
	reader   *reader
	queue    *queue
	prefetch int
	poll     bool // basic.get: no prefetch bound, ErrQueueEmpty instead of waiting
	nextTag  uint64
	unacked  map[uint64]*message
	closed   bool
	cause    error
	waiting  bool // a Read is blocked (counted in Broker.waiting)
	signal        // a change a blocked Read waits for: a settlement, the close
}

func (s *stream) stopWaitingLocked() {
	if s.waiting {
		s.waiting = false
		s.broker.waiting--
	}
}

func (s *stream) doneWaiting() {
	s.broker.mu.Lock()
	s.stopWaitingLocked()
	s.broker.mu.Unlock()
}

// Read blocks until a delivery is ready and the stream holds fewer than its
// prefetch unacknowledged, until ctx ends, or until the stream closes.
func (s *stream) Read(ctx context.Context, delivery *messaging.Delivery) error {
	if delivery == nil {
		return errors.New("memory: Read needs a *messaging.Delivery to fill; it was nil")
	}
	b := s.broker
	defer s.doneWaiting()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.mu.Lock()
		s.stopWaitingLocked()
		s.endIfDeletedLocked()
		if s.closed {
			err := s.cause
			b.unlock()
			return err
		}
		b.sweepLocked()
		if s.poll || len(s.unacked) < s.prefetch {
			if m := s.queue.pop(); m != nil {
				s.nextTag++
				s.unacked[s.nextTag] = m
				*delivery = m.delivery(s.queue.name, s.nextTag)
				name := s.queue.name
				b.emit(func(mon Monitor) { mon.MessageDelivered(name) })
				b.unlock()
				return nil
			}
		}
		if s.poll {
			name := s.queue.name
			b.unlock()
			return fmt.Errorf("memory: stream %q: %w", name, messaging.ErrQueueEmpty)
		}
		queueChanged, streamChanged, expiriesChanged := s.queue.waiter(), s.waiter(), b.expiries.waiter()
		expiry := b.nextExpiryLocked()
		s.waiting = true
		b.waiting++
		b.unlock()
		if err := s.wait(ctx, queueChanged, streamChanged, expiriesChanged, expiry); err != nil {
			return err
		}
	}
}

// wait blocks until the queue or stream changes, ctx ends, the next message
// expiry anywhere in the broker is due (an expired message may be
// dead-lettered into this stream's queue), or a message that expires is
// enqueued (it may be due before the timer).
func (s *stream) wait(ctx context.Context, queueChanged, streamChanged, expiriesChanged <-chan struct{}, expiry time.Duration) error {
	var due <-chan time.Time
	if expiry >= 0 {
		timer := time.NewTimer(expiry)
		defer timer.Stop()
		due = timer.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-queueChanged:
	case <-streamChanged:
	case <-expiriesChanged:
	case <-due:
	}
	return nil
}

// Acknowledge settles deliveries read from this stream, as the RabbitMQ
// transport does: a delivery listed twice counts once, and when any is not
// awaiting acknowledgement on this stream (acknowledged already, or read from
// another stream) it fails and acknowledges none of them.
func (s *stream) Acknowledge(ctx context.Context, deliveries ...messaging.Delivery) error {
	if len(deliveries) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: acknowledge %d delivery(ies) from stream %q: %w", len(deliveries), s.queue.name, err)
	}
	b := s.broker
	b.mu.Lock()
	defer b.unlock()
	if s.closed {
		return s.cause
	}
	tags := make([]uint64, 0, len(deliveries))
	for _, d := range deliveries {
		tags = append(tags, d.DeliveryID)
	}
	slices.Sort(tags)
	tags = slices.Compact(tags)
	for _, tag := range tags {
		if _, ok := s.unacked[tag]; !ok {
			return fmt.Errorf("memory: delivery %d is not awaiting acknowledgement on stream %q (acknowledged already, or read from another stream); nothing was acknowledged", tag, s.queue.name)
		}
	}
	for _, tag := range tags {
		delete(s.unacked, tag)
	}
	name, count := s.queue.name, len(tags)
	b.emit(func(mon Monitor) { mon.MessagesAcknowledged(name, count) })
	s.notify()
	return nil
}

// Requeue returns one delivery to the front of its queue, marked Redelivered,
// as a RabbitMQ basic.nack with requeue does; the stream's other deliveries
// stay unacknowledged and the stream goes on. It fails with
// messaging.ErrClosed once the stream has closed.
func (s *stream) Requeue(ctx context.Context, delivery messaging.Delivery) error {
	tag := delivery.DeliveryID
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: requeue delivery %d on stream %q: %w", tag, s.queue.name, err)
	}
	b := s.broker
	b.mu.Lock()
	defer b.unlock()
	s.endIfDeletedLocked()
	if s.closed {
		return s.cause
	}
	m, ok := s.unacked[tag]
	if !ok {
		return fmt.Errorf("memory: delivery %d is not awaiting acknowledgement on stream %q (settled already, or read from another stream); nothing was requeued", tag, s.queue.name)
	}
	delete(s.unacked, tag)
	s.queue.requeue([]*message{m})
	name := s.queue.name
	b.emit(func(mon Monitor) { mon.MessagesRequeued(name, 1) })
	s.notify()
	return nil
}

// Close ends the stream and returns its unacknowledged deliveries to the front
// of the queue, in the order they were delivered, marked Redelivered.
func (s *stream) Close() error {
	b := s.broker
	b.mu.Lock()
	defer b.unlock()
	s.closeLocked(closedError("stream"))
	return nil
}

// endIfDeletedLocked ends the stream when its queue was deleted, as the
// broker cancels the consumers of a deleted queue.
func (s *stream) endIfDeletedLocked() {
	if s.queue.deleted {
		s.closeLocked(fmt.Errorf("memory: queue %q was deleted, so the broker cancelled its consumer; open a new stream: %w", s.queue.name, messaging.ErrClosed))
	}
}

func (s *stream) closeLocked(cause error) {
	if s.closed {
		return
	}
	s.closed = true
	s.cause = cause
	b, q := s.broker, s.queue
	delete(s.reader.streams, s)
	if count := len(s.unacked); count > 0 && !q.deleted {
		tags := slices.Sorted(maps.Keys(s.unacked))
		messages := make([]*message, 0, len(tags))
		for _, tag := range tags {
			messages = append(messages, s.unacked[tag])
		}
		q.requeue(messages)
		name := q.name
		b.emit(func(mon Monitor) { mon.MessagesRequeued(name, count) })
	}
	s.unacked = map[uint64]*message{}
	s.notify()
	if s.poll {
		return
	}
	q.streams--
	if q.options.AutoDelete && q.streams == 0 && q.consumed && !q.deleted {
		b.deleteQueueLocked(q)
	}
}
