package request

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/batch"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/streaming"
)

// Requester sends requests of type Req to one address and waits for replies
// of type Resp. It is safe for concurrent use: replies are paired with their
// callers by correlation id, so many requests can be in flight at once.
//
// It reads its reply queue with a streaming subscription of its own, which
// declares the queue again after a lost connection, and publishes requests
// through a batch.Writer, which pipelines concurrent callers' publishes on
// one channel and dials again after a lost connection; Close releases both.
type Requester[Req, Resp any] struct {
	config     config
	connector  messaging.Connector
	topic      string
	routingKey string
	queue      string
	replyTo    any // queue, boxed once for every request's acemq-reply-to header
	generated  bool
	writer     *batch.Writer
	consumer   *streaming.Consumer

	closing chan struct{} // closed by Close: wakes callers waiting for the reply queue

	mu      sync.Mutex
	live    bool          // the reply stream is open
	ready   chan struct{} // closed when live becomes true
	pending map[string]waiter
	closed  bool
}

// waiter is a caller waiting for the reply to its request.
type waiter struct {
	request string // the request's message id, the reply's causation id
	replies chan reply
}

// reply is what the reply subscription hands a waiting caller.
type reply struct {
	delivery messaging.Delivery
	err      error
}

// NewRequester returns a requester that publishes to exchange topic ("" for
// the default exchange) under routingKey, and reads replies from a generated
// queue (acemq-reply-<uuid>: transient, exclusive, auto-delete, classic) or
// the one Options.ReplyTo names. It declares the reply queue and starts
// reading it before it returns; ctx bounds that start only, and a reply queue
// that cannot be declared is returned. Replies are read from the transport's
// connection beneath connector's decorators, as bytes (see replyConnector).
// The connector is not closed by Close; its owner closes it.
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
		writer:     batch.New(connector),
		ready:      make(chan struct{}),
		pending:    map[string]waiter{},
		closing:    make(chan struct{}),
	}
	if r.queue == "" {
		r.queue = replyQueuePrefix + messaging.NewID()
		r.generated = true
	}
	r.replyTo = r.queue
	if err := r.listen(ctx); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("acemq: the requester for %q could not open its reply queue %q: %w", routingKey, r.queue, err)
	}
	return r, nil
}

// ReplyQueue returns the name of the queue replies come back on.
func (r *Requester[Req, Resp]) ReplyQueue() string { return r.queue }

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
	dispatch := r.dispatch(envelope, messaging.NewID(), payload)
	routingKey, correlation := dispatch.RoutingKey, dispatch.CorrelationID
	// The requester's timeout and the caller's ctx are independent: bounded
	// ends with whichever comes first, and stopped says which it was.
	bounded, cancel := context.WithTimeout(ctx, r.config.timeout)
	defer cancel()
	stopped := func() error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		outcome = OutcomeTimedOut
		return fmt.Errorf("%w after %s (correlation %s)", ErrRequestTimedOut, r.config.timeout, correlation)
	}

	w := waiter{request: dispatch.MessageID, replies: make(chan reply, 1)}
	if err := r.register(bounded, correlation, w); err != nil {
		if bounded.Err() != nil {
			return response, stopped()
		}
		return response, fmt.Errorf("acemq: the requester for %q is closed: %w", routingKey, err)
	}
	defer r.forget(correlation)
	if err := r.publish(bounded, dispatch); err != nil {
		if bounded.Err() != nil {
			return response, stopped()
		}
		return response, fmt.Errorf("acemq: the request to %q was not published (correlation %s): %w", routingKey, correlation, err)
	}
	select {
	case got := <-w.replies:
		if response, err = r.answer(got, routingKey, correlation); err == nil {
			outcome = OutcomeAnswered
		}
		return response, err
	case <-bounded.Done():
		return response, stopped()
	}
}

// register puts w among the callers waiting for a reply as soon as the reply
// queue is live, waiting while it is declared again. It returns bounded's
// error when bounded ended first, and messaging.ErrClosed when the requester
// closed.
func (r *Requester[Req, Resp]) register(bounded context.Context, correlation string, w waiter) error {
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return messaging.ErrClosed
		}
		ready, live := r.ready, r.live
		if live {
			r.pending[correlation] = w
		}
		r.mu.Unlock()
		if live {
			return nil
		}
		select { // the reply queue is being declared again
		case <-ready:
		case <-r.closing: // the next turn returns ErrClosed
		case <-bounded.Done():
			return bounded.Err()
		}
	}
}

// publish sends the request through the one redialling publisher, which
// makes a write found on a connection that closed while idle once more.
func (r *Requester[Req, Resp]) publish(ctx context.Context, dispatch messaging.Dispatch) error {
	_, err := r.writer.Write(ctx, dispatch)
	return err
}

// answer turns what reached a caller into Do's result: the subscription's
// error (the reply queue lost, the requester closed), the responder's error
// reply, or the decoded response.
func (r *Requester[Req, Resp]) answer(got reply, routingKey, correlation string) (response Resp, err error) {
	if got.err != nil {
		return response, got.err
	}
	if text, failed := got.delivery.Headers[HeaderError]; failed {
		return response, &ResponderError{Text: errorText(text)}
	}
	if err := r.config.deserializer.Deserialize(got.delivery.Payload, &response); err != nil {
		return response, fmt.Errorf("acemq: the reply to %q (correlation %s) does not decode: %w", routingKey, correlation, err)
	}
	return response, nil
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
	headers[HeaderReplyTo] = r.replyTo
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
// messaging.ErrClosed, and closes the reply subscription (a generated reply
// queue goes with its connection) and the request writer. The reply
// subscription drains for Options.CloseTimeout at most, then the transport
// closes within its own close bound. It is safe to call more than once.
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

	var errs []error
	if r.consumer != nil {
		errs = append(errs, r.consumer.Close()) // bounded by the subscription's drain, Options.CloseTimeout
	}
	errs = append(errs, r.writer.Close())
	return errors.Join(errs...)
}

// errorText reads an acemq-error value: a string, or bytes from a client that
// writes strings as byte arrays; anything else as it prints.
func errorText(value any) string {
	if text := wire.Text(value); text != "" || value == nil {
		return text
	}
	return fmt.Sprint(value)
}
