package request

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// Requester sends requests of type Req to one address and waits for replies
// of type Resp. It is safe for concurrent use: replies are paired with their
// callers by correlation id, so many requests can be in flight at once.
//
// It owns a connection with the reply stream, a goroutine that reads it, and
// a connection with a confirm-mode writer for the requests, which pipelines
// concurrent callers' publishes; Close releases them all.
type Requester[Req, Resp any] struct {
	config     config
	connector  messaging.Connector
	topic      string
	routingKey string
	queue      string
	generated  bool
	writer     *sharedWriter

	stop    context.CancelFunc
	done    chan struct{}
	closing chan struct{} // closed by Close: wakes callers waiting for the reply queue

	mu      sync.Mutex
	live    bool          // the reply stream is open
	ready   chan struct{} // closed when live becomes true
	pending map[string]waiter
	closed  bool
	session *replySession
}

// waiter is a caller waiting for the reply to its request.
type waiter struct {
	request string // the request's message id, the reply's causation id
	replies chan reply
}

// reply is what the read loop hands a waiting caller.
type reply struct {
	delivery messaging.Delivery
	err      error
}

// replySession is one connection and the reply stream on it.
type replySession struct {
	connection messaging.Connection
	reader     messaging.Reader
	stream     messaging.Stream
}

func (s *replySession) close() error {
	var errs []error
	if s.stream != nil {
		errs = append(errs, s.stream.Close())
	}
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	if s.connection != nil {
		errs = append(errs, s.connection.Close())
	}
	return errors.Join(errs...)
}

// NewRequester returns a requester that publishes to exchange topic ("" for
// the default exchange) under routingKey, and reads replies from a generated
// queue (acemq-reply-<uuid>: transient, exclusive, auto-delete, classic) or
// the one Options.ReplyTo names. It declares the reply queue and starts
// reading it before it returns; ctx bounds that start only. The connector is
// not closed by Close; its owner closes it.
func NewRequester[Req, Resp any](ctx context.Context, connector messaging.Connector, topic, routingKey string, options ...Option) (*Requester[Req, Resp], error) {
	if connector == nil {
		return nil, errors.New("acemq: NewRequester needs a connector")
	}
	if routingKey == "" && topic == "" {
		return nil, errors.New("acemq: NewRequester needs an address: an exchange, a routing key, or both")
	}
	cfg := newConfig(options)
	r := &Requester[Req, Resp]{
		config:     cfg,
		connector:  connector,
		topic:      topic,
		routingKey: routingKey,
		queue:      cfg.replyTo,
		writer:     newSharedWriter(connector, "acemq: the requester's writer"),
		ready:      make(chan struct{}),
		pending:    map[string]waiter{},
		done:       make(chan struct{}),
		closing:    make(chan struct{}),
	}
	if r.queue == "" {
		r.queue = replyQueuePrefix + messaging.NewID()
		r.generated = true
	}
	session, err := r.open(ctx)
	if err != nil {
		_ = r.writer.Close()
		return nil, fmt.Errorf("acemq: the requester for %q could not open its reply queue %q: %w", routingKey, r.queue, err)
	}
	loop, stop := context.WithCancel(context.Background())
	r.stop = stop
	r.goLive(session)
	go r.read(loop, session)
	return r, nil
}

// ReplyQueue returns the name of the queue replies come back on.
func (r *Requester[Req, Resp]) ReplyQueue() string { return r.queue }

// streamConfig declares the reply queue: generated, it is transient,
// exclusive, auto-delete and classic; named, it is durable and quorum.
func (r *Requester[Req, Resp]) streamConfig() messaging.StreamConfig {
	c := messaging.StreamConfig{
		StreamName:        r.queue,
		ConsumerName:      r.queue,
		EstablishTopology: true,
		BufferCapacity:    DefaultReplyPrefetch,
		BatchCapacity:     1,
	}
	if r.generated {
		c.QueueType = messaging.QueueClassic
		c.ExclusiveStream = true
		c.AutoDeleteStream = true
		c.TransientStream = true
	} else {
		c.Replication = true
	}
	return c
}

// open connects, declares the reply queue and consumes it.
func (r *Requester[Req, Resp]) open(ctx context.Context) (*replySession, error) {
	s := &replySession{}
	var err error
	if s.connection, err = r.connector.Connect(ctx); err != nil {
		return nil, err
	}
	if s.reader, err = s.connection.Reader(ctx); err != nil {
		_ = s.close()
		return nil, err
	}
	if s.stream, err = s.reader.Stream(ctx, r.streamConfig()); err != nil {
		_ = s.close()
		return nil, err
	}
	return s, nil
}

func (r *Requester[Req, Resp]) goLive(session *replySession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.session = session
	r.live = true
	close(r.ready)
}

// lose marks the reply stream gone. With a generated queue, the replies to
// the requests in flight went with it, so their callers are told at once;
// a named queue keeps them, and the callers go on waiting.
func (r *Requester[Req, Resp]) lose(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = false
	r.session = nil
	r.ready = make(chan struct{})
	if !r.generated {
		return
	}
	for correlation, w := range r.pending {
		delete(r.pending, correlation)
		w.replies <- reply{err: messaging.Outage(fmt.Errorf("%w (reply queue %q, correlation %s: %v)", ErrReplyQueueLost, r.queue, correlation, cause))}
	}
}

// read hands each reply to its caller until loop ends, opening the reply
// queue again whenever its stream ends.
func (r *Requester[Req, Resp]) read(loop context.Context, session *replySession) {
	defer close(r.done)
	for {
		err := r.drain(loop, session)
		_ = session.close()
		if loop.Err() != nil {
			return
		}
		r.config.logger.Warn("acemq: the requester lost its reply queue and declares it again; requests in flight on a generated queue fail with ErrReplyQueueLost",
			"queue", r.queue, "routing_key", r.routingKey, "error", err)
		r.lose(err)
		if session = r.reopen(loop); session == nil {
			return
		}
		r.goLive(session)
	}
}

// drain reads replies until the stream ends or loop does.
func (r *Requester[Req, Resp]) drain(loop context.Context, session *replySession) error {
	for {
		var delivery messaging.Delivery
		if err := session.stream.Read(loop, &delivery); err != nil {
			return err
		}
		r.deliver(delivery)
		if err := session.stream.Acknowledge(loop, delivery); err != nil {
			return err
		}
	}
}

// deliver hands a reply to the caller waiting for its correlation id, or
// drops it when there is none. A reply whose causation id is not the waiting
// caller's request id is not the answer to that request (the responder
// stamps the request's id as the reply's causation): it is dropped and the
// caller goes on waiting. A reply without a causation id, from a responder
// that does not stamp one, is matched by correlation alone.
func (r *Requester[Req, Resp]) deliver(delivery messaging.Delivery) {
	r.mu.Lock()
	w, ok := r.pending[delivery.CorrelationID]
	refused := ok && delivery.CausationID != "" && delivery.CausationID != w.request
	if ok && !refused {
		delete(r.pending, delivery.CorrelationID)
	}
	r.mu.Unlock()
	switch {
	case refused:
		r.config.monitor.ReplyRefused(r.routingKey)
	case !ok:
		r.config.monitor.ReplyDropped(r.routingKey)
	default:
		w.replies <- reply{delivery: delivery} // buffered, and only one send per waiter
	}
}

// reopen declares the reply queue again, backing off while it fails; nil when
// loop ended first.
func (r *Requester[Req, Resp]) reopen(loop context.Context) *replySession {
	delay := r.config.reconnectDelay
	for {
		timer := time.NewTimer(delay)
		select {
		case <-loop.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		session, err := r.open(loop)
		if err == nil {
			return session
		}
		if loop.Err() != nil {
			return nil
		}
		delay = min(2*delay, max(maxReconnectDelay, r.config.reconnectDelay))
	}
}

// Do sends request and waits for its reply. It returns the decoded reply;
// a *ResponderError when the responder answered with an error; an error
// wrapping ErrRequestTimedOut when Options.Timeout passed first;
// ctx.Err() when ctx ended first; ErrReplyQueueLost when the generated reply
// queue went away meanwhile; or the publish's error (messaging.ErrUnroutable
// when nothing serves the address).
func (r *Requester[Req, Resp]) Do(ctx context.Context, request Req) (Resp, error) {
	return r.DoWith(ctx, request, messaging.Dispatch{})
}

// DoWith is Do with further envelope fields: MessageID, CausationID,
// MessageType, Headers, Expiration and the rest pass through, and a Topic or
// RoutingKey replaces the requester's address. CorrelationID, ReplyTo,
// Payload and Message are Do's own: the correlation id is always fresh, and
// the reply address is written both as the reply-to property and as the
// acemq-reply-to header.
func (r *Requester[Req, Resp]) DoWith(ctx context.Context, request Req, envelope messaging.Dispatch) (response Resp, err error) {
	started := time.Now()
	outcome := OutcomeFailed
	routingKey := r.routingKey
	defer func() { r.config.monitor.RequestCompleted(routingKey, outcome, time.Since(started)) }()

	payload, err := r.config.serializer.Serialize(request)
	if err != nil {
		return response, fmt.Errorf("acemq: the request to %q cannot be encoded; nothing was sent: %w", routingKey, err)
	}
	correlation := messaging.NewID()
	// The requester's timer and the caller's ctx are independent: the timer
	// gives ErrRequestTimedOut, ctx its own error.
	timer, stopTimer := context.WithTimeout(context.Background(), r.config.timeout)
	defer stopTimer()
	timedOut := func() error {
		outcome = OutcomeTimedOut
		return fmt.Errorf("%w after %s (correlation %s)", ErrRequestTimedOut, r.config.timeout, correlation)
	}

	dispatch := r.dispatch(envelope, correlation, payload)
	routingKey = dispatch.RoutingKey
	w := waiter{request: dispatch.MessageID, replies: make(chan reply, 1)}
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return response, fmt.Errorf("acemq: the requester for %q is closed: %w", routingKey, messaging.ErrClosed)
		}
		ready, live := r.ready, r.live
		if live {
			r.pending[correlation] = w
		}
		r.mu.Unlock()
		if live {
			break
		}
		select { // the reply queue is being declared again
		case <-ready:
		case <-r.closing: // the loop above returns ErrClosed
		case <-timer.Done():
			return response, timedOut()
		case <-ctx.Done():
			return response, ctx.Err()
		}
	}
	defer r.forget(correlation)

	publish, cancel := context.WithCancel(ctx)
	unbind := context.AfterFunc(timer, cancel) // the timer bounds the publish too
	_, err = r.writer.Write(publish, dispatch)
	if staleConnection(err) && publish.Err() == nil {
		// The writer's connection went away while idle; nothing was sent, and
		// the writer dials again on this call.
		_, err = r.writer.Write(publish, dispatch)
	}
	unbind()
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return response, ctx.Err()
		case timer.Err() != nil:
			return response, timedOut()
		}
		return response, fmt.Errorf("acemq: the request to %q was not published (correlation %s): %w", routingKey, correlation, err)
	}

	select {
	case got := <-w.replies:
		if got.err != nil {
			return response, got.err
		}
		if _, failed := got.delivery.Headers[HeaderError]; failed {
			return response, &ResponderError{Text: errorText(got.delivery.Headers[HeaderError])}
		}
		if err := r.config.deserializer.Deserialize(got.delivery.Payload, &response); err != nil {
			return response, fmt.Errorf("acemq: the reply to %q (correlation %s) does not decode: %w", routingKey, correlation, err)
		}
		outcome = OutcomeAnswered
		return response, nil
	case <-timer.Done():
		return response, timedOut()
	case <-ctx.Done():
		return response, ctx.Err()
	}
}

// dispatch builds the request: envelope's fields, the requester's address
// unless envelope names one, a fresh correlation id, the reply address
// written twice, the encoded payload, mandatory.
func (r *Requester[Req, Resp]) dispatch(envelope messaging.Dispatch, correlation string, payload []byte) messaging.Dispatch {
	d := envelope
	if d.Topic == "" && d.RoutingKey == "" {
		d.Topic, d.RoutingKey = r.topic, r.routingKey
	}
	if d.MessageType == "" {
		d.MessageType = r.config.messageType
	}
	if d.MessageID == "" {
		d.MessageID = messaging.NewID() // known here: the reply's causation must be it
	}
	d.CorrelationID = correlation
	d.ReplyTo = r.queue
	headers := make(map[string]any, len(envelope.Headers)+1)
	for name, value := range envelope.Headers {
		headers[name] = value
	}
	headers[HeaderReplyTo] = r.queue
	d.Headers = headers
	d.ContentType = r.config.serializer.ContentType()
	d.Payload = payload
	d.Message = nil
	d.Mandatory = true
	return d
}

// forget removes a caller that stopped waiting; a reply that comes later is
// dropped.
func (r *Requester[Req, Resp]) forget(correlation string) {
	r.mu.Lock()
	delete(r.pending, correlation)
	r.mu.Unlock()
}

// Close stops reading replies, fails the callers still waiting with
// messaging.ErrClosed, and closes the reply connection (a generated reply
// queue goes with it) and the request writer. It is bounded by
// Options.CloseTimeout and safe to call more than once.
func (r *Requester[Req, Resp]) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.closing)
	for correlation, w := range r.pending {
		delete(r.pending, correlation)
		w.replies <- reply{err: fmt.Errorf("acemq: the requester for %q closed before the reply arrived (correlation %s): %w", r.routingKey, correlation, messaging.ErrClosed)}
	}
	r.mu.Unlock()

	r.stop()
	timer := time.NewTimer(r.config.closeTimeout)
	defer timer.Stop()
	var errs []error
	select {
	case <-r.done:
	case <-timer.C:
		errs = append(errs, fmt.Errorf("acemq: the requester's reply loop for %q did not stop within %s: %w", r.queue, r.config.closeTimeout, messaging.ErrCloseTimeout))
	}
	errs = append(errs, r.writer.Close())
	return errors.Join(errs...)
}

// staleConnection reports a publish refused because the writer's connection
// had closed: the message was not sent, so sending it again cannot duplicate
// it. A lost confirmation (arrival unknown) is not one.
func staleConnection(err error) bool {
	return err != nil && errors.Is(err, messaging.ErrClosed) && !errors.Is(err, messaging.ErrArrivalUnknown)
}

// errorText reads an acemq-error value: a string, or bytes from a client that
// writes strings as byte arrays; anything else as it prints.
func errorText(value any) string {
	if text := wire.Text(value); text != "" || value == nil {
		return text
	}
	return fmt.Sprint(value)
}
