package rabbitmq

import (
	"context"
	"errors"
	"fmt"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/rabbitmq/adapter"
)

var _ messaging.Declarer = (*connection)(nil)

// DeclareExchange declares an exchange, or checks that one with the same
// kind, durability, auto-delete and arguments exists: a difference is the
// broker's 406, matching messaging.ErrPreconditionFailed.
func (c *connection) DeclareExchange(ctx context.Context, x messaging.Exchange) error {
	if err := x.Validate(); err != nil {
		return fmt.Errorf("declare exchange: %w", err)
	}
	return c.onChannel(ctx, fmt.Sprintf("declare exchange %q", x.Name), declareExchange(x))
}

// DeclareQueue declares a queue, or checks that one with the same properties
// exists (406 otherwise). An exclusive queue belongs to this connection and
// goes with it. A stream queue is declared durable, shared and kept
// (messaging.DeclaredQueue).
func (c *connection) DeclareQueue(ctx context.Context, q messaging.Queue) error {
	if q.Name == "" {
		return errors.New("declare queue: the queue has no name; name it (server-named queues are not supported)")
	}
	q, err := messaging.DeclaredQueue(q)
	if err != nil {
		return fmt.Errorf("declare queue: %w", err)
	}
	return c.onChannel(ctx, fmt.Sprintf("declare queue %q", q.Name), declareQueue(q))
}

// Bind binds a declared queue to a declared exchange; either missing is the
// broker's 404, matching messaging.ErrNotFound.
func (c *connection) Bind(ctx context.Context, b messaging.Binding) error {
	return c.onChannel(ctx, bindingStep(b), bind(b))
}

// DeleteQueue deletes a queue with its messages and bindings. A queue that
// does not exist is not an error.
func (c *connection) DeleteQueue(ctx context.Context, name string) error {
	return c.onChannel(ctx, fmt.Sprintf("delete queue %q", name), func(ch adapter.Channel) error {
		_, err := ch.QueueDelete(name, false, false, false)
		return err
	})
}

// DeleteExchange deletes an exchange and its bindings. An exchange that does
// not exist is not an error.
func (c *connection) DeleteExchange(ctx context.Context, name string) error {
	return c.onChannel(ctx, fmt.Sprintf("delete exchange %q", name), func(ch adapter.Channel) error {
		return ch.ExchangeDelete(name, false, false)
	})
}

// InspectQueue declares the queue passively: its ready messages and
// consumers, or the broker's 404 (messaging.ErrNotFound) when it does not
// exist, or 405 (messaging.ErrResourceLocked) when it is another
// connection's exclusive queue.
func (c *connection) InspectQueue(ctx context.Context, name string) (messaging.QueueState, error) {
	var state messaging.QueueState
	err := c.onChannel(ctx, fmt.Sprintf("inspect queue %q", name), func(ch adapter.Channel) error {
		q, err := ch.QueueDeclarePassive(name, false, false, false, false, nil)
		state = messaging.QueueState{Name: name, Messages: q.Messages, Consumers: q.Consumers}
		return err
	})
	if err != nil {
		return messaging.QueueState{}, err
	}
	return state, nil
}

// InspectExchange declares the exchange passively: nil when it exists, the
// broker's 404 (messaging.ErrNotFound) when it does not.
func (c *connection) InspectExchange(ctx context.Context, name string) error {
	return c.onChannel(ctx, fmt.Sprintf("inspect exchange %q", name), func(ch adapter.Channel) error {
		return ch.ExchangeDeclarePassive(name, amqp.ExchangeDirect, false, false, false, false, nil)
	})
}

// onChannel runs f on a channel of its own as one step of a topologyDeclarer
// (bounded by the broker timeout, past which the connection is severed and
// the error wraps ErrConnectTimeout; a refusal closes only that channel and
// comes back as a *messaging.BrokerError naming op), and closes the channel
// on every path.
func (c *connection) onChannel(ctx context.Context, op string, f func(adapter.Channel) error) (err error) {
	t := &topologyDeclarer{conn: c, ctx: ctx}
	defer func() {
		if t.ch == nil {
			return // never opened, or a refusal closed it
		}
		if closeErr := c.closeChannel(t.ch); closeErr != nil && err == nil {
			err = fmt.Errorf("%s: close its channel: %w", op, closeErr)
		}
	}()
	_, err = t.step(op, false, f)
	return err
}

// declareExchange is the broker call that declares x.
func declareExchange(x messaging.Exchange) func(adapter.Channel) error {
	return func(ch adapter.Channel) error {
		return ch.ExchangeDeclare(x.Name, string(x.Kind), x.Durable, x.AutoDelete, false, false, table(x.Arguments))
	}
}

// declareQueue is the broker call that declares q.
func declareQueue(q messaging.Queue) func(adapter.Channel) error {
	return func(ch adapter.Channel) error {
		_, err := ch.QueueDeclare(q.Name, q.Durable, q.AutoDelete, q.Exclusive, false, table(q.Arguments))
		return err
	}
}

// bind is the broker call that makes binding b; bindingStep names it.
func bind(b messaging.Binding) func(adapter.Channel) error {
	return func(ch adapter.Channel) error {
		return ch.QueueBind(b.Queue, b.Key, b.Exchange, false, table(b.Arguments))
	}
}

func bindingStep(b messaging.Binding) string {
	return fmt.Sprintf("bind queue %q to exchange %q with key %q", b.Queue, b.Exchange, b.Key)
}

// table converts declared arguments to an amqp091 table (nil stays nil).
func table(arguments map[string]any) amqp.Table {
	if arguments == nil {
		return nil
	}
	return wire.TableValue(arguments).(amqp.Table)
}
