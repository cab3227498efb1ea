package memory

import (
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// messageOf builds the held message for a dispatch, filling the envelope
// defaults. A dispatch that cannot travel on AMQP (wire.Check, with the
// configured maximum payload) is refused as the RabbitMQ transport refuses it:
// a *messaging.FieldError matching messaging.ErrWireLimit, or the
// reserved-header error.
func (b *Broker) messageOf(dispatch messaging.Dispatch) (*message, error) {
	if err := wire.Check(dispatch, b.config.maxMessageSize); err != nil {
		return nil, err
	}
	envelope := envelopeOf(dispatch, time.Now(), b.config.origin)
	return &message{exchange: dispatch.Topic, routingKey: dispatch.RoutingKey, envelope: envelope}, nil
}

// messagesOf builds the held messages for a write. A dispatch that is refused
// is kept as a refused message, answered alone with its error while the
// others are published, as the RabbitMQ transport does.
func (b *Broker) messagesOf(dispatches []messaging.Dispatch) ([]*message, []bool) {
	messages := make([]*message, len(dispatches))
	mandatory := make([]bool, len(dispatches))
	for i, d := range dispatches {
		m, err := b.messageOf(d)
		if err != nil {
			m = &message{exchange: d.Topic, routingKey: d.RoutingKey, envelope: messaging.Dispatch{MessageID: d.MessageID},
				refused: fmt.Errorf("memory: dispatch %d of %d was not published (the others were): %w", i+1, len(dispatches), err)}
		}
		messages[i], mandatory[i] = m, d.Mandatory
	}
	return messages, mandatory
}

// publishLocked routes m and enqueues a copy on every queue it reaches. It
// returns how many queues that was, NOT_FOUND for an undeclared exchange, and
// an unroutable error for a mandatory message that reached none.
func (b *Broker) publishLocked(m *message, mandatory bool) (int, error) {
	var targets []*queue
	if m.exchange == "" {
		if q, ok := b.queues[m.routingKey]; ok {
			targets = []*queue{q}
		}
	} else {
		x, ok := b.exchanges[m.exchange]
		if !ok {
			return 0, notFound("no exchange %q in vhost '/'; declare it before publishing to it", m.exchange)
		}
		targets = b.route(x, m.routingKey, m.envelope.Headers)
	}
	exchangeName, key, count := m.exchange, m.routingKey, len(targets)
	b.emit(func(mon Monitor) { mon.MessagePublished(exchangeName, key, count) })
	if len(targets) == 0 {
		if mandatory {
			return 0, unroutable(m.envelope.MessageID, m.exchange, m.routingKey)
		}
		return 0, nil
	}
	now := time.Now()
	for i, q := range targets {
		held := m
		if i > 0 {
			held = m.copyFor()
		}
		held.redelivered = false
		held.expiresAt = expiry(now, held.envelope.Expiration, q)
		if !held.expiresAt.IsZero() {
			b.expiries.notify() // wakes every Read waiting on the earliest expiry
		}
		q.push(held)
	}
	return len(targets), nil
}

// expiry is when a message enqueued now on q expires: the earlier of its own
// TTL and the queue's x-message-ttl; zero when neither applies.
func expiry(now time.Time, ttl time.Duration, q *queue) time.Time {
	var at time.Time
	if ttl > 0 {
		at = now.Add(ttl)
	}
	if queueTTL, ok := q.ttl(); ok {
		if candidate := now.Add(queueTTL); at.IsZero() || candidate.Before(at) {
			at = candidate
		}
	}
	return at
}

func (m *message) expired(now time.Time) bool {
	return !m.expiresAt.IsZero() && !now.Before(m.expiresAt)
}

// sweepLocked expires the messages at the head of every queue whose time has
// come, dead-lettering them where the queue says so.
func (b *Broker) sweepLocked() {
	now := time.Now()
	for _, q := range b.queues {
		// Only the messages present now: a dead-letter cycle back into this
		// queue must not spin here.
		for budget := len(q.messages); budget > 0 && len(q.messages) > 0 && q.messages[0].expired(now); budget-- {
			m := q.pop()
			name := q.name
			b.emit(func(mon Monitor) { mon.MessageExpired(name) })
			b.deadLetterLocked(q, m)
		}
	}
}

// deadLetterLocked republishes an expired message to the queue's
// x-dead-letter-exchange (with its x-dead-letter-routing-key, else the original
// key), without its per-message TTL. Without a dead-letter exchange, or when
// it routes nowhere, the message is dropped, as RabbitMQ does.
func (b *Broker) deadLetterLocked(q *queue, m *message) {
	dlx, ok := q.options.Arguments["x-dead-letter-exchange"].(string)
	if !ok {
		return
	}
	key := m.routingKey
	if k, ok := q.options.Arguments["x-dead-letter-routing-key"].(string); ok {
		key = k
	}
	dead := &message{exchange: dlx, routingKey: key, envelope: m.envelope}
	dead.envelope.Expiration = 0
	_, _ = b.publishLocked(dead, false)
}

// nextExpiryLocked is how long until the earliest message at the head of any
// queue expires (0 when one is due now), or -1 when none will.
func (b *Broker) nextExpiryLocked() time.Duration {
	var earliest time.Time
	for _, q := range b.queues {
		if len(q.messages) == 0 {
			continue
		}
		if at := q.messages[0].expiresAt; !at.IsZero() && (earliest.IsZero() || at.Before(earliest)) {
			earliest = at
		}
	}
	if earliest.IsZero() {
		return -1
	}
	return max(earliest.Sub(time.Now()), 0)
}
