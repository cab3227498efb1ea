package transactional

import (
	"context"

	"github.com/warrenmq/messaging"
)

type stateKey struct{}

// Middleware is New as a messaging.Middleware, for messaging.Chain: the inner
// handler is built once, and reads each batch's State from the context it
// receives (StateFrom) instead of from a factory. The returned middleware's
// handler is New's, so it also implements io.Closer.
func Middleware(connector messaging.Connector, options ...Option) messaging.Middleware {
	return func(inner messaging.Handler) messaging.Handler {
		return New(connector, func(state State) messaging.Handler {
			return stateHandler{inner: inner, state: state}
		}, options...)
	}
}

// StateFrom returns the State of the batch being handled under Middleware (or
// under New, when the factory's handler passes on the context it received).
// ok is false outside such a batch.
func StateFrom(ctx context.Context) (state State, ok bool) {
	state, ok = ctx.Value(stateKey{}).(State)
	return state, ok
}

// stateHandler hands inner the batch's State through the context.
type stateHandler struct {
	inner messaging.Handler
	state State
}

func (h stateHandler) Handle(ctx context.Context, messages ...any) {
	h.inner.Handle(context.WithValue(ctx, stateKey{}, h.state), messages...)
}
