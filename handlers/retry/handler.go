// Package retry recovers a panic from the handler it wraps, backs off, and
// handles the same batch again.
//
// Place it outside handlers/transactional and handlers/sqltx, never inside: they
// report a failed transaction by panicking after rolling back, and only an outer
// retry can recover that panic and run the batch in a fresh transaction.
//
//	handler := retry.New(transactional.New(connector, factory),
//		retry.Options.Policy(retrypolicy.Exponential(5, time.Second, time.Minute)),
//	)
//
// Without a policy the budget is retrypolicy.Default: five attempts.
package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wait"
)

type handler struct {
	inner  messaging.Handler
	config config
}

// New returns a Handler that calls inner and, when it panics, logs the panic,
// waits (the policy's wait, see Options.Policy) and calls it again with the
// same batch. It gives up, re-panicking with the last panic value, after the
// policy's attempts, at once when the value is an error marked with messaging.Fatal,
// and when ctx ends while waiting (then with an error wrapping ctx.Err() and the
// last failure). The handler is never run again once ctx has ended.
//
// A failure that is a dependency's, not the batch's (an error for which
// messaging.IsOutage is true), spends no attempt: the batch is held and tried
// again after a capped backoff (Options.MaxOutageBackoff) for as long as the
// outage lasts, reported once to the Monitor and by one WARN line, so an
// outage never exhausts a message's budget and never leads to dead-lettering.
// Only cancellation of ctx ends such a wait early.
//
// The budget is finite whatever the options say: retrypolicy.Default (five
// attempts, about 15 s of waits) unless Options.Policy states another. A
// policy with out-of-range inputs (retrypolicy.Policy.Err) is used as the
// policy corrected them, and New logs an ERROR naming them.
func New(inner messaging.Handler, options ...Option) messaging.Handler {
	config := newConfig(options)
	if err := config.policy.Err(); err != nil {
		config.logger.Error("Retry policy has invalid inputs; using them as corrected.",
			slog.String("policy", config.policy.String()), slog.Any("error", err))
	}
	return &handler{inner: inner, config: config}
}

// Middleware is New as a messaging.Middleware, for messaging.Chain.
func Middleware(options ...Option) messaging.Middleware {
	return func(inner messaging.Handler) messaging.Handler { return New(inner, options...) }
}

// Handle runs the batch until it succeeds or retrying gives up.
func (h *handler) Handle(ctx context.Context, messages ...any) {
	ctx = messaging.WithHopRecord(ctx) // a hop published on one run is not published again
	stream := streamOf(ctx)
	held := &hold{handler: h, ctx: ctx, count: len(messages)}
	defer held.end()
	for attempt := 1; ; {
		failed, value, stack := h.try(ctx, messages)
		if !failed {
			held.end()
			h.config.attempted(stream, attempt, nil)
			return
		}
		if err, isOutage := messaging.OutageOf(value); isOutage {
			if waitErr := held.wait(err); waitErr != nil {
				panic(stoppedWaiting(waitErr, err))
			}
			continue
		}
		held.end()
		h.config.attempted(stream, attempt, value)
		last := failure{stream: stream, attempt: attempt, value: value, stack: stack}
		if isFatal(value) {
			h.gaveUp(ctx, msgFatal, last)
			panic(value)
		}
		if attempt >= h.config.policy.MaxAttempts() {
			h.gaveUp(ctx, msgGivingUp, last)
			panic(value)
		}
		var delay time.Duration
		if !h.immediate(value) {
			delay = h.config.wait(attempt)
		}
		h.retrying(ctx, last, delay)
		if err := wait.For(ctx, delay); err != nil {
			panic(stopped(attempt, err, value))
		}
		if err := ctx.Err(); err != nil {
			panic(stopped(attempt, err, value))
		}
		attempt++
	}
}

// streamOf is the source queue of the batch's deliveries, or "" when the
// context carries none.
func streamOf(ctx context.Context) string {
	if deliveries := messaging.DeliveriesFrom(ctx); len(deliveries) > 0 {
		return deliveries[0].SourceQueue
	}
	return ""
}

// try calls the inner handler once and reports whether it panicked, with what,
// and (when configured) where.
func (h *handler) try(ctx context.Context, messages []any) (failed bool, value any, stack []byte) {
	defer func() {
		if failed {
			value = recover()
			if h.config.logStack {
				stack = debug.Stack()
			}
		}
	}()
	failed = true
	h.inner.Handle(ctx, messages...)
	failed = false
	return failed, nil, nil
}

// The log lines of a failed attempt: constant messages, the values as
// attributes, so a log pipeline can group them.
const (
	msgRetrying = "Handler failed; retrying."
	msgGivingUp = "Handler failed on its last attempt; giving up."
	msgFatal    = "Handler failed with a fatal error; not retrying."
	msgStack    = "Stack of a handler failure that will be retried."
)

// failure is one failed attempt: the batch's stream, the attempt's number,
// the recovered value and, when configured, the stack it was recovered with.
type failure struct {
	stream  string
	attempt int
	value   any
	stack   []byte
}

// attrs are the attributes every line about f carries: the attempt, of how
// many, and what failed; the stream when the batch came from one.
func (f failure) attrs(attempts int, extra ...slog.Attr) []slog.Attr {
	attrs := []slog.Attr{slog.Int("attempt", f.attempt), slog.Int("attempts", attempts)}
	attrs = append(attrs, extra...)
	attrs = append(attrs, slog.Any("panic", f.value))
	if f.stream != "" {
		attrs = append(attrs, slog.String("stream", f.stream))
	}
	return attrs
}

// retrying logs an attempt that will be retried: WARN without the stack,
// which goes to a DEBUG line of its own.
func (h *handler) retrying(ctx context.Context, f failure, delay time.Duration) {
	logger := h.config.logger
	logger.LogAttrs(ctx, slog.LevelWarn, msgRetrying, f.attrs(h.config.policy.MaxAttempts(), slog.Duration("wait", delay))...)
	if len(f.stack) > 0 && logger.Enabled(ctx, slog.LevelDebug) {
		logger.LogAttrs(ctx, slog.LevelDebug, msgStack, slog.Int("attempt", f.attempt), slog.String("stack", string(f.stack)))
	}
}

// gaveUp logs the failure that goes on to settlement: ERROR, with the stack
// when Options.LogStackTrace is on.
func (h *handler) gaveUp(ctx context.Context, message string, f failure) {
	attrs := f.attrs(h.config.policy.MaxAttempts())
	if len(f.stack) > 0 {
		attrs = append(attrs, slog.String("stack", string(f.stack)))
	}
	h.config.logger.LogAttrs(ctx, slog.LevelError, message, attrs...)
}

// immediate reports whether value is one of the ImmediateRetry values.
func (h *handler) immediate(value any) bool {
	for _, candidate := range h.config.immediate {
		if matches(value, candidate) {
			return true
		}
	}
	return false
}

func matches(value, candidate any) (matched bool) {
	defer func() {
		if recover() != nil { // an uncomparable dynamic value inside a comparable type
			matched = false
		}
	}()
	if target, ok := candidate.(error); ok {
		if err, ok := value.(error); ok && errors.Is(err, target) {
			return true
		}
	}
	t := reflect.TypeOf(value)
	if t == nil || t != reflect.TypeOf(candidate) || !t.Comparable() {
		return false
	}
	return value == candidate
}

func isFatal(value any) bool {
	err, ok := value.(error)
	return ok && messaging.IsFatal(err)
}

// stopped is the panic value when the context ends between attempts.
func stopped(attempt int, ctxErr error, last any) error {
	if err, ok := last.(error); ok {
		return fmt.Errorf("retry: stopped after attempt %d because the context ended (%w); the last failure was: %w", attempt, ctxErr, err)
	}
	return fmt.Errorf("retry: stopped after attempt %d because the context ended (%w); the last failure was: %v", attempt, ctxErr, last)
}

// stoppedWaiting is the panic value when the context ends during an outage
// wait; it keeps the outage's mark, so outer decorators do not set the batch
// aside.
func stoppedWaiting(ctxErr, last error) error {
	return fmt.Errorf("retry: stopped waiting on an outage because the context ended (%w); the last failure was: %w", ctxErr, last)
}
