package schedule

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/streaming"
)

// ErrNoRoutingKey is At's error for a message without a routing key.
var ErrNoRoutingKey = errors.New("acemq: a scheduled message needs a routing key")

// The texts of the control consumer's refusals: a message in DueQueue that is
// not a scheduled message is set aside on acemq.schedule.due.dlq.
const (
	missingHeadersText = "acemq: a message reached acemq.schedule.due without the headers a scheduled message carries. Something else is publishing into the scheduler's queues, which it must not: they are an implementation detail of this pattern"
	badDueAtText       = "acemq: x-schedule-due-at on a message in acemq.schedule.due is %v, which is not a moment"
)

// Scheduler delivers messages later, through the ladder of rungs (see the
// package documentation). It runs the control consumer of DueQueue until
// Close. At and In are safe for concurrent use.
type Scheduler struct {
	config   config
	writer   messaging.Writer
	consumer *streaming.Consumer

	scheduled, hops, delivered atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// New declares Topology through connector (it must reach the raw transport:
// rabbitmq.New or memory.New), starts the control consumer of DueQueue at
// prefetch Prefetch and returns once its stream opened. An error (the broker
// unreachable, a rung declared differently by someone else: errors.Is
// messaging.ErrPreconditionFailed) leaves nothing running. Close stops it.
func New(ctx context.Context, connector messaging.Connector, options ...Option) (*Scheduler, error) {
	c := newConfig(options)
	if err := declare(ctx, connector); err != nil {
		return nil, err
	}
	s := &Scheduler{config: c, writer: batch.New(connector)}
	subscription := streaming.NewSubscription(DueQueue,
		streaming.SubscriptionOptions.Name("acemq-schedule"),
		streaming.SubscriptionOptions.EstablishTopology(false), // Topology declared it, without arguments
		streaming.SubscriptionOptions.DeadLetters(true),        // acemq.schedule.due.dlq, for what fits no rung
		streaming.SubscriptionOptions.BufferCapacity(Prefetch),
		streaming.SubscriptionOptions.ReconnectDelay(reconnectDelay), // back within a second of the broker
		streaming.SubscriptionOptions.FullDeliveryToHandler(true),
		streaming.SubscriptionOptions.AddWorkers(messaging.HandlerFunc(s.handle)),
	)
	s.consumer = streaming.New(connector,
		streaming.Options.Subscriptions(subscription),
		streaming.Options.Logger(c.logger))
	if err := s.consumer.Start(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("schedule: the control consumer of %s did not start: %w", DueQueue, err)
	}
	return s, nil
}

// declare applies Topology on one connection of connector.
func declare(ctx context.Context, connector messaging.Connector) error {
	conn, err := connector.Connect(ctx)
	if err != nil {
		return fmt.Errorf("schedule: connect to declare the ladder: %w", err)
	}
	defer conn.Close()
	declarer, ok := messaging.As[messaging.Declarer](conn)
	if !ok {
		return errors.New("schedule: the transport's connection declares no topology (messaging.Declarer); give New the transport itself, rabbitmq.New or memory.New")
	}
	if err := Topology().Apply(ctx, declarer); err != nil {
		return fmt.Errorf("schedule: declare the ladder: %w", err)
	}
	return nil
}

// Close stops the control consumer (a message it is handling is finished or
// goes back to DueQueue) and closes the writer. It is safe to call more than
// once.
func (s *Scheduler) Close() error {
	s.closeOnce.Do(func() {
		consumerErr := s.consumer.Close()
		s.closeErr = errors.Join(consumerErr, s.writer.Close())
	})
	return s.closeErr
}

// Scheduled counts the messages At and In accepted.
func (s *Scheduler) Scheduled() uint64 { return s.scheduled.Load() }

// Hops counts the messages put on a rung (by At and by the control consumer).
func (s *Scheduler) Hops() uint64 { return s.hops.Load() }

// Delivered counts the due messages that reached a queue of their
// destination. Hops climbing while Delivered stands still means a
// destination nothing is bound to.
func (s *Scheduler) Delivered() uint64 { return s.delivered.Load() }

// In is At(ctx, time.Now().Add(delay), dispatch).
func (s *Scheduler) In(ctx context.Context, delay time.Duration, dispatch messaging.Dispatch) error {
	return s.At(ctx, time.Now().Add(delay), dispatch)
}

// At delivers dispatch to dispatch.Topic ("" the default exchange) under
// dispatch.RoutingKey (required: ErrNoRoutingKey) at about due, within
// about a second. Its Payload is sent as it is; a Message without a Payload
// is encoded once here (Options.Encoder, JSON by default). Its ContentType
// (the encoder's when empty) is restored on delivery; its MessageID (new
// when empty) and CorrelationID travel with it. Nothing else of the dispatch
// does: the delivered envelope is of type MessageType, as every AceMQ
// scheduler delivers it.
//
// A moment less than a second away, or past, goes straight to the control
// queue, which delivers it (and keeps it, through the 10 s rung, while it
// reaches no queue); At returns no error for it. Otherwise the message is
// put on the largest rung that does not overshoot, or a shorter one when that
// rung is missing; when no rung takes it At returns the error and nothing was
// scheduled.
func (s *Scheduler) At(ctx context.Context, due time.Time, dispatch messaging.Dispatch) error {
	if dispatch.RoutingKey == "" {
		return ErrNoRoutingKey
	}
	m := message{
		exchange: dispatch.Topic, routingKey: dispatch.RoutingKey, due: due,
		contentType: dispatch.ContentType, payload: dispatch.Payload,
		id: dispatch.MessageID, correlation: dispatch.CorrelationID,
	}
	if m.payload == nil && dispatch.Message != nil {
		payload, err := s.config.encode(dispatch.Message)
		if err != nil {
			return fmt.Errorf("schedule: encode the %T to schedule: %w", dispatch.Message, err)
		}
		m.payload = payload
		if m.contentType == "" {
			m.contentType = s.config.contentType
		}
	}
	if m.id == "" {
		m.id = messaging.NewID()
	}
	remaining := time.Until(due)
	if remaining < smallest {
		if err := s.write(ctx, m.onRung(DueQueue)); err != nil {
			return fmt.Errorf("schedule: message %s is due now, and could not be handed to %s: %w", m.id, DueQueue, err)
		}
	} else if err := s.hop(ctx, m, rungsFor(remaining)); err != nil {
		return err
	}
	s.scheduled.Add(1)
	s.config.monitor.Scheduled()
	return nil
}

// message is a scheduled message as the four headers carry it.
type message struct {
	exchange, routingKey string
	due                  time.Time
	contentType          string
	payload              []byte
	id, correlation      string
}

// onRung is the dispatch that carries m to a rung (or the control queue)
// under key: bytes, the four headers, mandatory and persistent.
func (m message) onRung(key string) messaging.Dispatch {
	return messaging.Dispatch{
		Topic: Exchange, RoutingKey: key, Mandatory: true,
		MessageID: m.id, CorrelationID: m.correlation,
		MessageType: MessageType, ContentType: BytesContentType,
		Headers: map[string]any{
			HeaderExchange:    m.exchange,
			HeaderRoutingKey:  m.routingKey,
			HeaderDueAt:       m.due.UnixMilli(),
			HeaderContentType: m.contentType,
		},
		Payload: m.payload,
	}
}

// delivery is the dispatch that delivers m: a fresh envelope of type
// MessageType with m's id, the content type it was scheduled with, and none
// of the four headers.
func (m message) delivery() messaging.Dispatch {
	contentType := m.contentType
	if contentType == "" {
		contentType = DefaultContentType
	}
	return messaging.Dispatch{
		Topic: m.exchange, RoutingKey: m.routingKey, Mandatory: true,
		MessageID: m.id, CorrelationID: m.correlation,
		MessageType: MessageType, ContentType: contentType,
		Payload: m.payload,
	}
}

// hop puts m on the first of rungs that takes it. A rung that reaches no
// queue (deleted) is skipped for the next; any other failure ends the
// attempt. When none takes it the error says why.
func (s *Scheduler) hop(ctx context.Context, m message, rungs []Rung) error {
	var last error
	for _, r := range rungs {
		err := s.write(ctx, m.onRung(r.Name))
		if err == nil {
			s.hops.Add(1)
			s.config.monitor.Hopped(r.Name)
			return nil
		}
		if !unrouted(err) {
			return fmt.Errorf("schedule: message %s could not be put on rung %s: %w", m.id, r.Name, err)
		}
		s.config.monitor.RungMissing(r.Name)
		last = err
	}
	return fmt.Errorf("schedule: message %s (due %s) could be put on no rung of %s: %v were tried and reached no queue; declare the ladder again (schedule.Topology): %w",
		m.id, m.due.UTC().Format(time.RFC3339), Exchange, names(rungs), last)
}

// write publishes dispatch through the one redialling publisher, which
// makes a write found on a connection that closed while the scheduler was
// idle once more, so the first hop after a reconnect does not fail.
func (s *Scheduler) write(ctx context.Context, dispatch messaging.Dispatch) error {
	_, err := s.writer.Write(ctx, dispatch)
	return err
}

// unrouted reports a publish that reached no queue: unroutable, or an
// exchange that does not exist.
func unrouted(err error) bool {
	return errors.Is(err, messaging.ErrUnroutable) || errors.Is(err, messaging.ErrNotFound)
}

func names(rungs []Rung) []string {
	out := make([]string, len(rungs))
	for i, r := range rungs {
		out[i] = r.Name
	}
	return out
}

// handle is the control consumer's worker: each delivery of DueQueue is
// delivered when due, or put back on a rung.
func (s *Scheduler) handle(ctx context.Context, messages ...any) {
	for _, value := range messages {
		d, ok := value.(messaging.Delivery)
		if !ok {
			panic(fmt.Errorf("schedule: the control consumer was handed a %T, not a messaging.Delivery", value))
		}
		if err := s.control(ctx, d); err != nil {
			panic(err)
		}
	}
}

// control decides one message of DueQueue. A message it cannot place is set
// aside with messaging.Reject; an error it returns (an outage, a set-aside
// that failed) leaves the message unacknowledged for the broker to redeliver.
func (s *Scheduler) control(ctx context.Context, d messaging.Delivery) error {
	m, err := read(d)
	if err != nil {
		return s.setAside(ctx, d, err)
	}
	key := "schedule:" + strconv.FormatUint(d.DeliveryID, 10)
	if remaining := time.Until(m.due); remaining >= smallest {
		err := messaging.PublishOnce(ctx, key+":hop", func() error { return s.hop(ctx, m, rungsFor(remaining)) })
		return s.settle(ctx, d, err)
	}
	err = messaging.PublishOnce(ctx, key+":deliver", func() error { return s.write(ctx, m.delivery()) })
	switch {
	case err == nil:
		s.delivered.Add(1)
		s.config.monitor.Delivered()
		return nil
	case unrouted(err):
		// Nothing is bound to the destination yet: keep it, and try again
		// after the 10 s rung, for as long as it takes.
		s.config.monitor.Undelivered(m.exchange, m.routingKey)
		err := messaging.PublishOnce(ctx, key+":again", func() error { return s.hop(ctx, m, rungsFor(loopRung)) })
		return s.settle(ctx, d, err)
	}
	return s.settle(ctx, d, fmt.Errorf("schedule: deliver message %s to %s: %w", m.id, target(m), err))
}

// settle turns a publish's outcome into the delivery's: nothing to do when
// it landed; unacknowledged, for the broker to redeliver, when the broker
// could not be asked (messaging.IsOutage) or the handler's context ended; set aside with the reason
// otherwise (no rung took it, the broker refused it).
func (s *Scheduler) settle(ctx context.Context, d messaging.Delivery, err error) error {
	switch {
	case err == nil:
		return nil
	case messaging.IsOutage(err) || ctx.Err() != nil:
		// Marked as an outage so the runtime neither spends an attempt nor
		// sets it aside: a shutdown must not move it to the dead-letter queue.
		return messaging.Outage(err)
	}
	return s.setAside(ctx, d, err)
}

// setAside puts d on acemq.schedule.due.dlq with reason.
func (s *Scheduler) setAside(ctx context.Context, d messaging.Delivery, reason error) error {
	s.config.monitor.SetAside(reason)
	if err := messaging.Reject(ctx, d, reason); err != nil {
		return fmt.Errorf("schedule: set message %s aside on %s: %w", d.MessageID, wire.DeadLetterQueue(DueQueue), err)
	}
	return nil
}

// read takes the four headers off d; a message without them is refused
// (Fatal), as is a due time that is not a moment.
func read(d messaging.Delivery) (message, error) {
	exchange, hasExchange := d.Headers[HeaderExchange]
	routingKey, hasKey := d.Headers[HeaderRoutingKey]
	dueAt, hasDue := d.Headers[HeaderDueAt]
	if !hasExchange || !hasKey || !hasDue {
		return message{}, messaging.Fatal(errors.New(missingHeadersText))
	}
	due, ok := wire.Millis(dueAt)
	if !ok {
		return message{}, messaging.Fatalf(badDueAtText, dueAt)
	}
	return message{
		exchange: wire.Text(exchange), routingKey: wire.Text(routingKey), due: due,
		contentType: wire.Text(d.Headers[HeaderContentType]), payload: d.Payload,
		id: d.MessageID, correlation: d.CorrelationID,
	}, nil
}

func target(m message) string {
	if m.exchange == "" {
		return fmt.Sprintf("queue %q (default exchange)", m.routingKey)
	}
	return fmt.Sprintf("exchange %q with key %q", m.exchange, m.routingKey)
}
