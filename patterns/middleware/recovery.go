package middleware

import (
	"context"
	"errors"

	"github.com/warrenmq/messaging"
)

// Recovery turns a handler's panic into a rejection, as the AceMQ engines
// settle one: the delivery is dead-lettered (messaging.Reject) with
// messaging.Fatal("acemq: the handler panicked on message <id>: <value>")
// and Handle returns, so nothing retries it. Put retry inside it, so a
// panic is retried first and rejected only when retry gives up.
//
// Two panics go on outwards: one marked messaging.Outage (the dependency, not
// the message, failed: no attempt is spent and nothing is dead-lettered), and
// one in a batch of several messages, because Recovery cannot tell which of
// them failed: the streaming runtime then handles each alone, through
// Recovery again, which rejects the ones that still panic. A delivery the
// handler already settled keeps that settlement.
func Recovery(options ...Option) messaging.Middleware {
	c := newConfig(options)
	return func(inner messaging.Handler) messaging.Handler {
		return messaging.HandlerFunc(func(ctx context.Context, messages ...any) {
			recovered, panicked := call(ctx, inner, messages)
			if !panicked {
				return
			}
			if err, ok := recovered.(error); ok && messaging.IsOutage(err) {
				panic(recovered)
			}
			deliveries := messaging.DeliveriesFrom(ctx)
			if len(deliveries) != 1 {
				panic(recovered)
			}
			delivery := deliveries[0]
			if _, decided := messaging.DecisionOf(ctx, delivery); decided {
				return
			}
			reason := messaging.Fatalf("acemq: the handler panicked on message %s: %v", delivery.MessageID, recovered)
			if err := messaging.Reject(ctx, delivery, reason); err != nil {
				if errors.Is(err, messaging.ErrNoSettler) {
					panic(recovered)
				}
				panic(err)
			}
			c.monitor.Recovered(delivery.SourceQueue)
		})
	}
}
