package messaging

import (
	"context"
	"time"
)

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
	return &deliveriesContext{Context: ctx, deliveries: deliveries}
}

// deliveriesContext carries a batch's envelopes in one allocation per batch,
// where context.WithValue would box the slice in a second.
type deliveriesContext struct {
	context.Context
	deliveries []Delivery
}

// Value answers deliveriesKey with the context itself (a pointer, so the
// lookup does not allocate) and every other key as its parent does.
func (c *deliveriesContext) Value(key any) any {
	if key == (deliveriesKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// DeliveriesFrom returns the envelopes of the messages the Handle that
// received ctx was given, in the same order as its messages, or nil when
// nothing set them. The slice is shared: do not change it.
func DeliveriesFrom(ctx context.Context) []Delivery {
	if c, ok := ctx.Value(deliveriesKey{}).(*deliveriesContext); ok {
		return c.deliveries
	}
	return nil
}

// OutageListener hears when a decorator starts and stops holding its batch
// because a dependency is down (IsOutage). handlers/retry tells it, and the
// streaming runtime listens, so that it can report which subscriptions are
// waiting on an outage and end such a wait at once on shutdown. Calls for one
// handler invocation alternate Waiting, Resumed; Waiting may repeat (each
// failed try) before Resumed.
type OutageListener interface {
	// Waiting reports that the handler is holding its batch, not counting
	// attempts, because of cause; it will try again after wait.
	Waiting(cause error, wait time.Duration)
	// Resumed reports that the handler no longer waits: the dependency
	// answered, the failure became the message's own, or the wait was
	// cancelled.
	Resumed()
}

type outageListenerKey struct{}

// WithOutageListener returns ctx carrying listener. The runtime calls it;
// handlers do not.
func WithOutageListener(ctx context.Context, listener OutageListener) context.Context {
	return context.WithValue(ctx, outageListenerKey{}, listener)
}

// OutageListenerFrom returns the listener ctx carries, or one that ignores
// every call.
func OutageListenerFrom(ctx context.Context) OutageListener {
	if listener, ok := ctx.Value(outageListenerKey{}).(OutageListener); ok && listener != nil {
		return listener
	}
	return nopOutageListener{}
}

type nopOutageListener struct{}

func (nopOutageListener) Waiting(error, time.Duration) {}
func (nopOutageListener) Resumed()                     {}
