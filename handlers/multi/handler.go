// Package multi fans one batch out to several handlers, in order.
package multi

import (
	"context"

	"github.com/warrenmq/messaging"
)

// handler calls each of its handlers in turn with the same batch.
type handler struct {
	handlers []messaging.Handler
}

// New returns a Handler that calls each of handlers, in the order given, with the
// same context and batch. Nil handlers are skipped. A panic in one handler stops
// the batch there and propagates unchanged, so an outer retry runs the whole batch
// again: every handler must therefore be idempotent.
func New(handlers ...messaging.Handler) messaging.Handler {
	kept := make([]messaging.Handler, 0, len(handlers))
	for _, h := range handlers {
		if h != nil {
			kept = append(kept, h)
		}
	}
	return handler{handlers: kept}
}

// Handle calls every handler with messages.
func (h handler) Handle(ctx context.Context, messages ...any) {
	for _, inner := range h.handlers {
		inner.Handle(ctx, messages...)
	}
}
