package deadletter

import (
	"context"
	"fmt"
	"time"
)

// RetryExchange is the durable direct exchange retry rungs dead-letter into;
// each source queue is bound to it on its own name.
const RetryExchange = "acemq.retry"

// Declarer is implemented by a messaging.Connection that can declare broker
// topology; the decorator type-asserts it on the connection it opened from its
// connector. Retry uses it for waits at or above the broker-wait threshold.
// Without it (or when the declaration fails) a wait equal to the threshold is
// held in the process, and a longer one fails the settlement so the broker
// redelivers the message.
type Declarer interface {
	// DeclareRetryRung declares, idempotently: the durable direct exchange
	// acemq.retry; the binding of queue to it with routing key queue; and the
	// classic durable queue rung (RungName(queue, ttl)) with exactly three
	// arguments: x-message-ttl = ttl in milliseconds (int64),
	// x-dead-letter-exchange = acemq.retry, x-dead-letter-routing-key = queue.
	DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
}

// RungName names the retry rung for queue and delay: {queue}.retry.{d} where d
// is the delay in whole seconds, written Nh when it divides into hours, Nm
// when it divides into minutes, else Ns; a sub-second delay is 0s.
func RungName(queue string, delay time.Duration) string {
	return queue + ".retry." + rungDuration(delay)
}

func rungDuration(delay time.Duration) string {
	seconds := int64(delay / time.Second)
	switch {
	case seconds <= 0:
		return "0s"
	case seconds%3600 == 0:
		return fmt.Sprintf("%dh", seconds/3600)
	case seconds%60 == 0:
		return fmt.Sprintf("%dm", seconds/60)
	default:
		return fmt.Sprintf("%ds", seconds)
	}
}
