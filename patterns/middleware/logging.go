package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
)

// logHandled is the one message Logging writes to a *slog.Logger; the
// delivery's values are its attributes, so a log pipeline groups every line
// under it.
const logHandled = "Delivery handled"

// Logging writes one line per delivery once the handler returned (or
// panicked). Put it first (outermost) so it records what the others decided.
//
// With printf nil it writes to a *slog.Logger (Options.Logger, default
// slog.Default()) at INFO the constant message "Delivery handled" with the values as
// attributes: queue, message_id, message_type, attempt, took (the batch's
// time), outcome, and reason when there is one:
//
//	msg="Delivery handled" queue=orders message_id=m1 message_type=order.placed attempt=2 took=1.5s outcome=parked reason="not now"
//
// outcome is what was decided for the delivery (accepted, rejected, parked,
// retried, in_progress; a Retry the budget ended reads rejected) or panicked
// when the handler panicked and the settlement outside decides (then reason
// is the panic's value).
//
// With printf set (log.Printf, for example) it receives each line in the
// AceMQ family's text form instead, the values inside the line:
//
//	acemq <id> type=<type> attempt=<n> took=<duration> <outcome>[: <reason>]
func Logging(printf func(format string, args ...any), options ...Option) messaging.Middleware {
	write := printed(printf)
	if printf == nil {
		write = logged(newConfig(options).logger)
	}
	return func(inner messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			started := time.Now()
			recovered, panicked := call(ctx, inner, messages)
			took := time.Since(started)
			for _, delivery := range messaging.DeliveriesFrom(ctx) {
				outcome, reason := "accepted", ""
				if decision, decided := messaging.DecisionOf(ctx, delivery); decided {
					outcome = decision.Verdict.String()
					if decision.Reason != nil {
						reason = decision.Reason.Error()
					}
				} else if panicked {
					outcome, reason = "panicked", fmt.Sprint(recovered)
				}
				write(delivery, took, outcome, reason)
			}
			if panicked {
				panic(recovered)
			}
		})
	}
}

// handled writes one delivery's line.
type handled func(delivery messaging.Delivery, took time.Duration, outcome, reason string)

// printed writes the AceMQ family's text line through printf.
func printed(printf func(format string, args ...any)) handled {
	return func(d messaging.Delivery, took time.Duration, outcome, reason string) {
		if reason != "" {
			reason = ": " + reason
		}
		printf("acemq %s type=%s attempt=%d took=%s %s%s", d.MessageID, d.MessageType, max(d.Attempt, 1), took, outcome, reason)
	}
}

// logged writes logHandled with the values as attributes.
func logged(logger *slog.Logger) handled {
	return func(d messaging.Delivery, took time.Duration, outcome, reason string) {
		attrs := []any{
			slog.String("queue", d.SourceQueue),
			slog.String("message_id", d.MessageID),
			slog.String("message_type", d.MessageType),
			slog.Int("attempt", max(d.Attempt, 1)),
			slog.Duration("took", took),
			slog.String("outcome", outcome),
		}
		if reason != "" {
			attrs = append(attrs, slog.String("reason", reason))
		}
		logger.Info(logHandled, attrs...)
	}
}
