package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// retryExchange is the direct exchange a retry rung dead-letters into; each
// source queue is bound to it under its own name (the AceMQ wire contract).
const retryExchange = "acemq.retry"

// DeclareRetryRung declares a broker-side retry delay for queue: the durable
// classic queue rung holds a message for ttl, then dead-letters it through the
// acemq.retry exchange back to queue. It runs on a channel of its own, each step
// bounded by the broker timeout, and closes that channel on every path. A ttl
// is sent in whole milliseconds and must be at least one.
//
// The deadletter package reaches it by asserting this method on a
// messaging.Connection.
func (c *connection) DeclareRetryRung(ctx context.Context, queue, rung string, ttl time.Duration) (err error) {
	switch {
	case queue == "" || rung == "":
		return fmt.Errorf("declare retry rung %q for queue %q: both names are required", rung, queue)
	case queue == rung:
		return fmt.Errorf("declare retry rung %q for queue %q: the rung must be a queue of its own, or messages would loop", rung, queue)
	case ttl.Milliseconds() < 1:
		return fmt.Errorf("declare retry rung %q for queue %q: the delay %s is under a millisecond; pass at least 1ms", rung, queue, ttl)
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
	args := amqp.Table{
		"x-message-ttl":             ttl.Milliseconds(),
		"x-dead-letter-exchange":    retryExchange,
		"x-dead-letter-routing-key": queue,
	}
	return step(fmt.Sprintf("declare queue %q", rung), func() error {
		_, err := ch.QueueDeclare(rung, true, false, false, false, args)
		return err
	})
}
