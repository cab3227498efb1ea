// Package outage carries, through a handler's context, the consumer runtime's
// ear for a decorator that holds its batch while a dependency is down
// (messaging.IsOutage): handlers/retry tells it when it starts and stops
// waiting, so that streaming can report which subscriptions are waiting on an
// outage and end such a wait at once on shutdown.
package outage

import (
	"context"
	"github.com/warrenmq/messaging"
	"time"
)

// Listener hears when a handler starts and stops holding its batch because of
// an outage. Calls for one handler invocation alternate Waiting, Resumed;
// Waiting may repeat (each failed try) before Resumed.
type Listener interface {
	// Waiting reports that the handler is holding its batch, not counting
	// attempts, because of cause; it will try again after wait.
	Waiting(cause error, wait time.Duration)
	// Resumed reports that the handler no longer waits: the dependency
	// answered, the failure became the message's own, or the wait was
	// cancelled.
	Resumed()
}

type key struct{}

// With returns ctx carrying listener.
func With(ctx context.Context, listener Listener) context.Context {
	return context.WithValue(ctx, key{}, listener)
}

// From returns the listener ctx carries, or one that ignores every call.
func From(ctx context.Context) Listener {
	if listener, ok := ctx.Value(key{}).(Listener); ok && listener != nil {
		return listener
	}
	return nop{}
}

type nop struct{}

func (nop) Waiting(error, time.Duration) {}
func (nop) Resumed()                     {}

// Of reports whether value, a recovered panic value, is an error marked as a
// dependency's outage (messaging.IsOutage), and returns it. Retry holds such
// a batch without spending its budget; a settlement decorator never sets it
// aside.
func Of(value any) (error, bool) {
	err, ok := value.(error)
	if !ok || !messaging.IsOutage(err) {
		return nil, false
	}
	return err, true
}
