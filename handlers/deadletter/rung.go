package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// RetryExchange is the durable direct exchange retry rungs dead-letter into;
// each source queue is bound to it on its own name.
const RetryExchange = retrypolicy.RetryExchange

// Declarer is implemented by a messaging.Connection that can declare broker
// topology; the decorator finds it (messaging.As) on the connection its
// copies are published on. Retry uses it for waits the policy holds in the
// broker (retrypolicy.Policy.InBroker). Without it (or when the declaration
// fails) a wait equal to the policy's broker-wait threshold is held in the
// process, and a longer one fails the settlement so the broker redelivers
// the message.
type Declarer interface {
	// DeclareRetryRung declares, idempotently: the durable direct exchange
	// acemq.retry; the binding of queue to it with routing key queue; and the
	// classic durable queue rung (retrypolicy.RungName(queue, ttl), ttl a
	// whole number of seconds) with exactly the three arguments of
	// retrypolicy.RungArguments(queue, ttl).
	DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error
}

// DeclareRungs declares on connection, ahead of any retry, the rungs that the
// settlement New(connector, inner, options...) would hold queue's broker
// waits in: the ladder of its policy (retrypolicy.Policy.Rungs), each with
// queue's binding to acemq.retry. The streaming runtime calls it when a
// consumer starts, so the rungs exist before the first retry. It returns the
// rungs it declared.
//
// It declares nothing, and returns nil, when the ladder is empty (no wait
// reaches the broker), with Options.RefuseRetry, or when neither connection
// nor any Connection beneath it implements Declarer (Retry then holds waits
// as Declarer describes). It stops at the first rung that cannot be declared
// and returns the error, which names the rung.
func DeclareRungs(ctx context.Context, connection messaging.Connection, queue string, options ...Option) ([]retrypolicy.Rung, error) {
	c := newConfig(options)
	if c.refuseRetry != "" {
		return nil, nil
	}
	rungs := c.policy.Rungs(queue)
	if len(rungs) == 0 {
		return nil, nil
	}
	declarer, ok := messaging.As[Declarer](connection)
	if !ok {
		return nil, nil
	}
	for i, rung := range rungs {
		if err := declarer.DeclareRetryRung(ctx, queue, rung.Name, rung.TTL); err != nil {
			return rungs[:i], fmt.Errorf("deadletter: declare retry rung %q (%s) for queue %q: %w", rung.Name, rung.TTL, queue, err)
		}
	}
	return rungs, nil
}
