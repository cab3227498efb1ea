package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
)

// ErrHandlerTimeout is what Timeout's retry reason wraps, and the cause of
// the handler's cancelled context (context.Cause). It is not
// context.DeadlineExceeded on purpose: that one reads as an outage
// (messaging.IsOutage), which spends no attempt, and a handler that never
// finishes in time would then be retried for ever instead of dead-lettered
// when its budget ends.
var ErrHandlerTimeout = errors.New("middleware: the handler ran past its deadline and was cancelled")

// Timeout bounds a batch's handling to d (zero or less means DefaultTimeout):
// the handler's context is cancelled at d, so a cooperative handler stops
// promptly, and when the handler returns (or panics) after that, each of its
// deliveries is retried (messaging.Retry with "acemq: handling message <id>
// did not finish within <d>: ...", wrapping ErrHandlerTimeout) whatever the handler
// said about itself: retrying work that may have succeeded costs a duplicate,
// accepting work that may have failed costs a message. A handler that ignores
// its context is not stopped; no wrapper can stop it.
//
// A delivery the handler already settled through the context (messaging.
// Accept, Reject, Park, Retry) keeps that settlement: settlement is eager,
// the first one wins.
func Timeout(d time.Duration, options ...Option) messaging.Middleware {
	if d <= 0 {
		d = DefaultTimeout
	}
	c := newConfig(options)
	return func(inner messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			limited, cancel := context.WithTimeoutCause(ctx, d, ErrHandlerTimeout)
			defer cancel()
			recovered, panicked := call(limited, inner, messages)
			if !errors.Is(context.Cause(limited), ErrHandlerTimeout) {
				if panicked {
					panic(recovered)
				}
				return
			}
			for _, delivery := range messaging.DeliveriesFrom(ctx) {
				if _, decided := messaging.DecisionOf(ctx, delivery); decided {
					continue
				}
				err := fmt.Errorf("acemq: handling message %s did not finish within %s: %w", delivery.MessageID, d, ErrHandlerTimeout)
				if settleErr := messaging.Retry(ctx, delivery, err); settleErr != nil {
					if errors.Is(settleErr, messaging.ErrNoSettler) {
						panic(err) // not acknowledged: the broker redelivers it
					}
					panic(settleErr)
				}
				c.monitor.TimedOut(delivery.SourceQueue)
			}
		})
	}
}

// call runs the handler and recovers its panic.
func call(ctx context.Context, handler messaging.Handler, messages []any) (recovered any, panicked bool) {
	panicked = true
	defer func() {
		if panicked {
			recovered = recover()
		}
	}()
	handler.Handle(ctx, messages...)
	panicked = false
	return nil, false
}
