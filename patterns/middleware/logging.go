package middleware

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
)

// Logging writes one line per delivery once the handler returned (or
// panicked), in the AceMQ form
//
//	acemq <id> type=<type> attempt=<n> took=<duration> <outcome>[: <reason>]
//
// where outcome is what was decided for the delivery (accepted, rejected,
// parked, retried, in_progress; a Retry the budget ended reads rejected) or
// "panicked" when the handler panicked and the settlement outside decides.
// took is the batch's time. Put it first (outermost) so it records what the
// others decided. printf receives each line (log.Printf, for example); nil
// writes them at INFO to slog.Default().
func Logging(printf func(format string, args ...any)) messaging.Middleware {
	if printf == nil {
		printf = func(format string, args ...any) { slog.Default().Info(fmt.Sprintf(format, args...)) }
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
						reason = ": " + decision.Reason.Error()
					}
				} else if panicked {
					outcome, reason = "panicked", fmt.Sprintf(": %v", recovered)
				}
				printf("acemq %s type=%s attempt=%d took=%s %s%s",
					delivery.MessageID, delivery.MessageType, max(delivery.Attempt, 1), took, outcome, reason)
			}
			if panicked {
				panic(recovered)
			}
		})
	}
}
