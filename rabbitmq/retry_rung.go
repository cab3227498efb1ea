package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging/retrypolicy"
)

// retryExchange is the direct exchange a retry rung dead-letters into; each
// source queue is bound to it under its own name (the AceMQ wire contract).
const retryExchange = retrypolicy.RetryExchange

// DeclareRetryRung declares a broker-side retry delay for queue: the durable
// classic queue rung holds a message for ttl, then dead-letters it through the
// acemq.retry exchange back to queue, with exactly the arguments of
// retrypolicy.RungArguments. It runs on a channel of its own, each step
// bounded by the broker timeout, and closes that channel on every path.
//
// ttl must be a whole number of seconds, at least one, and rung must be
// retrypolicy.RungName(queue, ttl) (a ladder's rungs, retrypolicy.Policy.Rungs,
// always are): the name says the TTL, so two waits never share a rung name
// with different TTLs, which the broker would refuse with PRECONDITION_FAILED.
//
// The deadletter package reaches it by asserting this method on a
// messaging.Connection.
func (c *connection) DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) (err error) {
	if err := retrypolicy.CheckRung(queue, rung, ttl); err != nil {
		return err
	}
	ch, err := c.openChannel(ctx)
	if err != nil {
		return fmt.Errorf("declare retry rung %q for queue %q: %w", rung, queue, err)
	}
	defer func() {
		if closeErr := c.closeChannel(ch); closeErr != nil {
			err = errors.Join(err, fmt.Errorf("close the channel of retry rung %q: %w", rung, closeErr))
		}
	}()

	step := func(what string, f func() error) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("declare retry rung %q for queue %q: %s: %w", rung, queue, what, err)
		}
		if err := c.call(what, ErrConnectTimeout, f); err != nil {
			return fmt.Errorf("declare retry rung %q for queue %q: %s: %w", rung, queue, what, err)
		}
		return nil
	}
	if err := step(fmt.Sprintf("declare exchange %q", retryExchange), func() error {
		return ch.ExchangeDeclare(retryExchange, amqp.ExchangeDirect, true, false, false, false, nil)
	}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("bind queue %q to exchange %q", queue, retryExchange), func() error {
		return ch.QueueBind(queue, queue, retryExchange, false, nil)
	}); err != nil {
		return err
	}
	args := amqp.Table(retrypolicy.RungArguments(queue, ttl))
	return step(fmt.Sprintf("declare queue %q", rung), func() error {
		_, err := ch.QueueDeclare(rung, true, false, false, false, args)
		return err
	})
}
