package deadletter

import (
	"context"
	"time"

	"github.com/warrenmq/messaging/retrypolicy"
)

// RetryExchange is the durable direct exchange retry rungs dead-letter into;
// each source queue is bound to it on its own name.
const RetryExchange = retrypolicy.RetryExchange

// Declarer is implemented by a messaging.Connection that can declare broker
// topology; the decorator type-asserts it on the connection it opened from its
// connector. Retry uses it for waits the policy holds in the broker
// (retrypolicy.Policy.InBroker). Without it (or when the declaration fails) a
// wait equal to the threshold is held in the process, and a longer one fails
// the settlement so the broker redelivers the message.
type Declarer interface {
	// DeclareRetryRung declares, idempotently: the durable direct exchange
	// acemq.retry; the binding of queue to it with routing key queue; and the
	// classic durable queue rung (retrypolicy.RungName(queue, ttl), ttl a
	// whole number of seconds) with exactly the three arguments of
	// retrypolicy.RungArguments(queue, ttl).
	DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
}
