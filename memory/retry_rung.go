package memory

import (
	"context"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/retrypolicy"
)

// DeclareRetryRung declares, as the RabbitMQ transport does, a broker-side
// retry delay for queue: the durable direct exchange acemq.retry, queue bound
// to it under its own name, and the durable classic rung queue holding a
// message for ttl before dead-lettering it back (exactly
// retrypolicy.RungArguments). handlers/deadletter finds it by asserting the
// method, so retry waits above the broker-wait threshold are held by this
// broker in tests as they are by RabbitMQ.
func (c *connection) DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) error {
	if err := retrypolicy.CheckRung(queue, rung, ttl); err != nil {
		return err
	}
	if err := c.DeclareExchange(ctx, messaging.Exchange{Name: retrypolicy.RetryExchange, Kind: messaging.ExchangeDirect, Durable: true}); err != nil {
		return err
	}
	if err := c.Bind(ctx, messaging.Binding{Queue: queue, Exchange: retrypolicy.RetryExchange, Key: queue}); err != nil {
		return err
	}
	return c.DeclareQueue(ctx, messaging.Queue{Name: rung, Durable: true, Arguments: retrypolicy.RungArguments(queue, ttl)})
}
