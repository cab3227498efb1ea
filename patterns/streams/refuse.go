package streams

import (
	"context"
	"fmt"
	"strings"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// RetryOnStreamError is the reason a message is parked when a handler on a
// stream asked for messaging.Retry or messaging.InProgress. Both republish the
// message onto the queue it came from, and on a stream that appends a second
// copy to the log, for every consumer to read now and on every replay. It
// wraps the handler's own reason, so errors.Is against a sentinel still
// matches through the refusal.
type RetryOnStreamError struct {
	// Stream is the stream the message was read from.
	Stream string
	// MessageID is the message's id.
	MessageID string
	// Offset is the message's x-stream-offset when HasOffset.
	Offset    uint64
	HasOffset bool
	// Verb is what the handler called: "messaging.Retry" or
	// "messaging.InProgress".
	Verb string
	// Err is the handler's reason (nil for InProgress, which gives none).
	Err error
}

// Error is the AceMQ libraries' refusal, with this library's verbs.
func (e *RetryOnStreamError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acemq: a handler on stream %q returned %s for message %s", e.Stream, e.Verb, e.MessageID)
	if e.HasOffset {
		fmt.Fprintf(&b, " at offset %d", e.Offset)
	}
	fmt.Fprintf(&b, ", which this library refuses: a retry republishes the message onto the queue it came from, "+
		"and on a stream that appends a second copy to the log at a new offset — for every consumer to read now "+
		"and on every replay afterwards. It was parked on %s instead. A stream handler has two honest choices: "+
		"park it deliberately with messaging.Park(ctx, delivery, err), or record the x-stream-offset header and "+
		"return messaging.Accept(ctx, delivery) to checkpoint and move on.", wire.ParkedQueue(e.Stream))
	if e.Err != nil {
		b.WriteString(" The handler's reason was: ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the handler's reason.
func (e *RetryOnStreamError) Unwrap() error { return e.Err }

// RefuseRetry is the messaging.Middleware Read puts inside the runtime's
// settlement: a handler's messaging.Retry or messaging.InProgress parks the
// message on {stream}.parked with a *RetryOnStreamError instead of
// republishing it onto the stream. Every other settlement passes through.
// Use it yourself only around a handler that runs under your own settlement
// decorator on a stream.
func RefuseRetry(monitor Monitor) messaging.Middleware {
	if monitor == nil {
		monitor = NopMonitor{}
	}
	return func(next messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			if inner := messaging.SettlerFrom(ctx); inner != nil {
				ctx = messaging.WithSettler(ctx, refusingSettler{inner: inner, monitor: monitor})
			}
			next.Handle(ctx, messages...)
		})
	}
}

// refusingSettler turns a Retry or InProgress into a Park with the refusal.
type refusingSettler struct {
	inner   messaging.Settler
	monitor Monitor
}

func (s refusingSettler) Settle(ctx context.Context, delivery messaging.Delivery, decision messaging.Decision) error {
	if decision.Verdict != messaging.Retried && decision.Verdict != messaging.InProgressed {
		return s.inner.Settle(ctx, delivery, decision)
	}
	refusal := &RetryOnStreamError{Stream: delivery.SourceQueue, MessageID: delivery.MessageID, Verb: "messaging.Retry", Err: decision.Reason}
	if decision.Verdict == messaging.InProgressed {
		refusal.Verb = "messaging.InProgress"
	}
	refusal.Offset, refusal.HasOffset = OffsetOf(delivery)
	if err := s.inner.Settle(ctx, delivery, messaging.Decision{Verdict: messaging.Parked, Reason: refusal}); err != nil {
		return err
	}
	s.monitor.RetryRefused(delivery.SourceQueue)
	return nil
}

func (s refusingSettler) Decided(delivery messaging.Delivery) (messaging.Decision, bool) {
	return s.inner.Decided(delivery)
}
