package request

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/warrenmq/messaging"
)

// Func answers one request: it receives the request's envelope and its
// decoded value and returns the response, or an error that goes back to the
// caller as an error reply. A Func fails the same way a handler does, by
// panicking, when the failure is not the caller's to hear about (a database
// that is down): the request is then retried by the decorators around it.
type Func[Req, Resp any] func(ctx context.Context, delivery messaging.Delivery, request Req) (Resp, error)

// Handler is the responder as a messaging.Handler: run it under the
// streaming runtime (Serve does) with FullDeliveryToHandler, or under any
// settlement decorator that puts the envelopes in the context. For each
// request it calls the Func and publishes the reply:
//
//   - to the default exchange, routing key the reply address (the
//     acemq-reply-to header first, then the reply-to property), correlation
//     the request's, causation the request's id, not mandatory: a reply with
//     nowhere to go is dropped and the request accepted;
//   - an error from the Func goes back as a zero response carrying
//     acemq-error, and then the request is rejected to {queue}.dlq: it is
//     never retried;
//   - a request with no reply address is rejected (fatal) to {queue}.dlq;
//   - a reply that cannot be published is retried (messaging.Retry), and the
//     Func runs again: responders should be idempotent.
type Handler[Req, Resp any] struct {
	replies messaging.Writer
	answer  Func[Req, Resp]
	config  config

	answered     atomic.Int64
	unanswerable atomic.Uint64
}

// NewHandler returns the responder over fn, publishing replies through
// replies (a batch.Writer over the transport, for one). Options.Codec and
// Options.Monitor apply.
func NewHandler[Req, Resp any](replies messaging.Writer, fn Func[Req, Resp], options ...Option) *Handler[Req, Resp] {
	return &Handler[Req, Resp]{replies: replies, answer: fn, config: newConfig(options)}
}

// Answered counts the replies published (error replies included). It is
// counted before the reply is published, and taken back when the publish
// fails.
func (h *Handler[Req, Resp]) Answered() uint64 { return uint64(max(h.answered.Load(), 0)) }

// Unanswerable counts the requests dead-lettered for carrying no reply
// address.
func (h *Handler[Req, Resp]) Unanswerable() uint64 { return h.unanswerable.Load() }

// Handle answers every request of the batch; messages are messaging.Delivery
// values (FullDeliveryToHandler) or decoded values whose envelopes are in
// ctx. It panics, as handlers fail, only when a settlement could not be
// recorded or the envelopes are missing.
func (h *Handler[Req, Resp]) Handle(ctx context.Context, messages ...any) {
	envelopes := messaging.DeliveriesFrom(ctx)
	for i, message := range messages {
		delivery, ok := message.(messaging.Delivery)
		if !ok {
			if i >= len(envelopes) {
				panic(errors.New("acemq: the responder got a message without its envelope; run it under the streaming runtime with FullDeliveryToHandler, or pass on the context Handle received"))
			}
			delivery = envelopes[i]
		}
		if err := h.handle(ctx, delivery, message); err != nil {
			panic(err)
		}
	}
}

// handle answers one request; an error means its settlement failed.
func (h *Handler[Req, Resp]) handle(ctx context.Context, delivery messaging.Delivery, message any) error {
	queue := delivery.SourceQueue
	address, ok := ReplyAddress(delivery)
	if !ok {
		h.unanswerable.Add(1)
		h.config.monitor.Unanswerable(queue)
		return messaging.Reject(ctx, delivery, messaging.Fatal(&UnanswerableError{MessageID: delivery.MessageID}))
	}
	request, err := h.decode(delivery, message)
	var response Resp
	if err == nil {
		response, err = h.answer(ctx, delivery, request)
	}
	var payload []byte
	if err == nil {
		payload, err = h.config.serializer.Serialize(response)
		if err != nil {
			err = fmt.Errorf("the response cannot be encoded: %w", err)
		}
	}
	var failure error
	if err != nil {
		failure = err
		var zero Resp
		if payload, err = h.config.serializer.Serialize(zero); err != nil {
			payload = nil
		}
	}
	reply := messaging.Dispatch{
		RoutingKey:    address,
		CorrelationID: delivery.CorrelationID,
		CausationID:   delivery.MessageID,
		ContentType:   h.config.serializer.ContentType(),
		Payload:       payload,
	}
	if failure != nil {
		reply.Headers = map[string]any{HeaderError: failure.Error()}
	}
	h.answered.Add(1)
	if err := messaging.PublishOnce(ctx, delivery.MessageID+"/reply", func() error {
		_, err := h.replies.Write(ctx, reply)
		return err
	}); err != nil {
		h.answered.Add(-1)
		return messaging.Retry(ctx, delivery, fmt.Errorf("acemq: the reply to request %s could not be published to %q: %w", delivery.MessageID, address, err))
	}
	h.config.monitor.Answered(queue)
	if failure != nil {
		return messaging.Reject(ctx, delivery, messaging.Fatal(failure))
	}
	return nil
}

// decode returns the request: the message when a serializer decoded it
// already, else the payload decoded with the codec.
func (h *Handler[Req, Resp]) decode(delivery messaging.Delivery, message any) (Req, error) {
	if request, ok := message.(Req); ok {
		if _, isDelivery := message.(messaging.Delivery); !isDelivery {
			return request, nil
		}
	}
	if request, ok := delivery.Message.(Req); ok {
		return request, nil
	}
	var request Req
	if err := h.config.deserializer.Deserialize(delivery.Payload, &request); err != nil {
		return request, fmt.Errorf("the request does not decode: %w", err)
	}
	return request, nil
}
