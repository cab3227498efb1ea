package request

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/decorate"
	"github.com/warrenmq/messaging/streaming"
)

// replyBatch is the most replies the reply subscription hands its handler at
// once: it only pairs each with its caller, so a backlog is cleared in few
// calls.
const replyBatch = 64

// listen starts the streaming consumer of the reply queue and waits for its
// first attempt to open the stream (ctx bounds the wait).
func (r *Requester[Req, Resp]) listen(ctx context.Context) error {
	events := streamEvents{opened: r.goLive, closed: r.lose}
	r.consumer = streaming.New(replyConnector{Connector: r.connector, queue: r.queue, generated: r.generated},
		streaming.Options.Logger(r.config.logger),
		streaming.Options.Monitor(events),
		streaming.Options.Subscriptions(r.subscription()))
	return r.consumer.Start(ctx)
}

// subscription reads the reply queue: declared on every connect (generated:
// classic, and through replyConnector transient, exclusive and auto-delete;
// named: durable and quorum), without dead-letter queues, as bytes
// (the requester decodes a reply with its own codec), and each batch of
// replies handed to deliver.
func (r *Requester[Req, Resp]) subscription() *streaming.Subscription {
	options := []streaming.SubscriptionOption{
		streaming.SubscriptionOptions.Name(r.queue),
		streaming.SubscriptionOptions.DeadLetters(false),
		streaming.SubscriptionOptions.BufferCapacity(DefaultReplyPrefetch),
		streaming.SubscriptionOptions.BatchCapacity(replyBatch),
		streaming.SubscriptionOptions.FullDeliveryToHandler(true),
		streaming.SubscriptionOptions.ReconnectDelay(r.config.reconnectDelay),
		streaming.SubscriptionOptions.ShutdownStrategy(streaming.ShutdownStrategyDrain, r.config.closeTimeout),
		streaming.SubscriptionOptions.AddWorkers(messaging.HandlerFunc(r.replies)),
	}
	if r.generated {
		options = append(options, streaming.SubscriptionOptions.QueueType(messaging.QueueClassic))
	} else {
		options = append(options, streaming.SubscriptionOptions.StreamReplication(true))
	}
	return streaming.NewSubscription(r.queue, options...)
}

// replies is the reply subscription's handler: each reply goes to its
// caller, or is dropped. It never fails, so every reply is acknowledged.
func (r *Requester[Req, Resp]) replies(_ context.Context, messages ...any) {
	for _, message := range messages {
		if delivery, ok := message.(messaging.Delivery); ok {
			r.deliver(delivery)
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

// goLive marks the reply stream open: callers waiting for it go on.
func (r *Requester[Req, Resp]) goLive() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live {
		return
	}
	r.live = true
	close(r.ready)
}

// lose marks the reply stream gone. With a generated queue, the replies to
// the requests in flight went with it, so their callers are told at once;
// a named queue keeps them, and the callers go on waiting. The subscription
// declares the queue again under the same name.
func (r *Requester[Req, Resp]) lose() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live || r.closed {
		return
	}
	r.live = false
	r.ready = make(chan struct{})
	r.config.logger.Warn("Requester lost its reply queue and declares it again; requests in flight on a generated queue fail with ErrReplyQueueLost",
		"queue", r.queue, "routing_key", r.routingKey, "in_flight", len(r.pending))
	if !r.generated {
		return
	}
	for correlation, w := range r.pending {
		delete(r.pending, correlation)
		w.replies <- reply{err: messaging.Outage(fmt.Errorf("%w (reply queue %q, correlation %s)", ErrReplyQueueLost, r.queue, correlation))}
	}
}

// streamEvents turns the reply subscription's stream events into the
// requester's: opened when the stream is live, closed when it ended.
type streamEvents struct {
	streaming.NopMonitor
	opened, closed func()
}

func (e streamEvents) StreamOpened(_ string, err error) {
	if err == nil {
		e.opened()
	}
}

func (e streamEvents) StreamClosed(string) { e.closed() }

// replyConnector is the connector the reply subscription reads through. It
// reads replies from the transport's own connection, beneath the
// decorators of the one it is given (each offers Unwrap), as the bytes they
// were published as: a decoding decorator (serialization) would refuse a
// reply whose type it was not told of, and the requester decodes replies
// with its own codec. And it declares a generated reply queue as the wire
// contract has it: transient, exclusive to the connection that reads it, and
// auto-delete, so it goes with that connection; it sets the three on the
// reply queue's StreamConfig, which a streaming subscription does not state
// itself. Everything else passes through.
type replyConnector struct {
	messaging.Connector
	queue     string
	generated bool
}

func (c replyConnector) Connect(ctx context.Context) (messaging.Connection, error) {
	connection, err := c.Connector.Connect(ctx)
	return decorate.Opened("acemq: requester", "connection", connection, err, func(connection messaging.Connection) messaging.Connection {
		return replyConnection{Connection: connection, reads: transportOf(connection), queue: c.queue, generated: c.generated}
	})
}

// Unwrap returns the connector replyConnector decorates (messaging.As).
func (c replyConnector) Unwrap() messaging.Connector { return c.Connector }

// transportOf follows connection's Unwrap methods down to the transport's
// connection.
func transportOf(connection messaging.Connection) messaging.Connection {
	for {
		wrapper, ok := connection.(interface{ Unwrap() messaging.Connection })
		if !ok || wrapper.Unwrap() == nil {
			return connection
		}
		connection = wrapper.Unwrap()
	}
}

// replyConnection is a connection whose readers come from reads, the
// transport's connection beneath it; closing it closes both.
type replyConnection struct {
	messaging.Connection
	reads     messaging.Connection
	queue     string
	generated bool
}

func (c replyConnection) Reader(ctx context.Context) (messaging.Reader, error) {
	reader, err := c.reads.Reader(ctx)
	if err != nil || !c.generated {
		return reader, err
	}
	return replyReader{Reader: reader, queue: c.queue}, nil
}

// Unwrap returns the connection replyConnection decorates (messaging.As).
func (c replyConnection) Unwrap() messaging.Connection { return c.Connection }

type replyReader struct {
	messaging.Reader
	queue string
}

func (r replyReader) Stream(ctx context.Context, config messaging.StreamConfig) (messaging.Stream, error) {
	if config.StreamName == r.queue {
		config.ExclusiveStream, config.AutoDeleteStream, config.TransientStream = true, true, true
	}
	return r.Reader.Stream(ctx, config)
}

// Unwrap returns the reader replyReader decorates (messaging.As).
func (r replyReader) Unwrap() messaging.Reader { return r.Reader }
