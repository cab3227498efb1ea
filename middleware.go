package messaging

import "context"

// Middleware decorates a Handler, the way net/http middleware decorates an
// http.Handler: retry, a transaction, settlement and every pattern are one.
type Middleware func(Handler) Handler

// Chain composes middlewares into one, the first outermost:
// Chain(a, b, c)(h) is a(b(c(h))). A nil middleware is skipped.
func Chain(middlewares ...Middleware) Middleware {
	return func(handler Handler) Handler {
		for i := len(middlewares) - 1; i >= 0; i-- {
			if middlewares[i] != nil {
				handler = middlewares[i](handler)
			}
		}
		return handler
	}
}

type deliveriesKey struct{}

// WithDeliveries returns a context that carries the envelopes of the
// messages about to be handed to a Handler, in the same order. The streaming
// runtime and every decorator that hands a handler a different batch (a
// subset, when isolating one message) set it, so the envelope travels with
// the decoded values without a flag to keep in sync.
func WithDeliveries(ctx context.Context, deliveries []Delivery) context.Context {
	return context.WithValue(ctx, deliveriesKey{}, deliveries)
}

// DeliveriesFrom returns the envelopes of the messages the Handle that
// received ctx was given, in the same order as its messages, or nil when
// nothing set them. The slice is shared: do not change it.
func DeliveriesFrom(ctx context.Context) []Delivery {
	deliveries, _ := ctx.Value(deliveriesKey{}).([]Delivery)
	return deliveries
}
