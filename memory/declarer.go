package memory

import (
	"context"
	"fmt"

	"github.com/warrenmq/messaging"
)

var _ messaging.Declarer = (*connection)(nil)

// DeclareExchange declares an exchange, or checks that one of the same kind,
// durability, auto-delete and arguments exists (PRECONDITION_FAILED otherwise).
// An auto-delete exchange is deleted when its last binding goes.
func (c *connection) DeclareExchange(ctx context.Context, x messaging.Exchange) error {
	if err := x.Validate(); err != nil {
		return fmt.Errorf("memory: declare exchange: %w", err)
	}
	return c.locked(ctx, fmt.Sprintf("declare exchange %q", x.Name), func(b *Broker) error {
		return b.declareExchangeWithLocked(exchangeOf(x))
	})
}

// DeclareQueue declares a queue, or checks that one with the same properties
// exists (PRECONDITION_FAILED otherwise). An exclusive queue belongs to this
// connection: other connections get RESOURCE_LOCKED, and it is deleted when
// this connection closes. An auto-delete queue is deleted when its last
// consumer goes. A stream queue is declared durable, shared and kept
// (messaging.DeclaredQueue), as on RabbitMQ.
func (c *connection) DeclareQueue(ctx context.Context, q messaging.Queue) error {
	q, err := messaging.DeclaredQueue(q)
	if err != nil {
		return fmt.Errorf("memory: declare queue: %w", err)
	}
	return c.locked(ctx, fmt.Sprintf("declare queue %q", q.Name), func(b *Broker) error {
		return b.declareQueueLocked(q.Name, queueOptions(q), c)
	})
}

// exchangeOf is the broker's exchange of a declaration.
func exchangeOf(x messaging.Exchange) exchange {
	return exchange{name: x.Name, kind: string(x.Kind), durable: x.Durable, autoDelete: x.AutoDelete, arguments: x.Arguments}
}

// queueOptions are the broker's properties of a queue as DeclaredQueue gave it.
func queueOptions(q messaging.Queue) QueueOptions {
	return QueueOptions{Durable: q.Durable, Exclusive: q.Exclusive, AutoDelete: q.AutoDelete, Arguments: q.Arguments}
}

// Bind binds a declared queue to a declared exchange (NOT_FOUND when either
// is missing).
func (c *connection) Bind(ctx context.Context, binding messaging.Binding) error {
	return c.locked(ctx, fmt.Sprintf("bind queue %q to exchange %q with key %q", binding.Queue, binding.Exchange, binding.Key), func(b *Broker) error {
		return b.bindWithLocked(binding.Queue, binding.Exchange, binding.Key, binding.Arguments, c)
	})
}

// DeleteQueue deletes a queue, its messages and its bindings; streams
// consuming it end. A missing queue is not an error; another connection's
// exclusive queue is RESOURCE_LOCKED.
func (c *connection) DeleteQueue(ctx context.Context, name string) error {
	return c.locked(ctx, fmt.Sprintf("delete queue %q", name), func(b *Broker) error {
		q, ok := b.queues[name]
		if !ok {
			return nil
		}
		if err := c.exclusiveCheckLocked(q); err != nil {
			return err
		}
		b.deleteQueueLocked(q)
		return nil
	})
}

// DeleteExchange deletes an exchange and its bindings; a missing one is not
// an error, the default and amq.* exchanges are ACCESS_REFUSED.
func (c *connection) DeleteExchange(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := c.broker.DeleteExchange(name); err != nil {
		return c.refusedAs(fmt.Sprintf("delete exchange %q", name), err)
	}
	return nil
}

// InspectQueue reports a queue's ready messages and its consumers without
// declaring it: NOT_FOUND when it does not exist, RESOURCE_LOCKED when it is
// another connection's exclusive queue.
func (c *connection) InspectQueue(ctx context.Context, name string) (messaging.QueueState, error) {
	var state messaging.QueueState
	err := c.locked(ctx, fmt.Sprintf("inspect queue %q", name), func(b *Broker) error {
		b.sweepLocked()
		q, ok := b.queues[name]
		if !ok {
			return notFound("no queue '%s' in vhost '/'", name)
		}
		if err := c.exclusiveCheckLocked(q); err != nil {
			return err
		}
		state = messaging.QueueState{Name: name, Messages: len(q.messages), Consumers: q.streams}
		return nil
	})
	return state, err
}

// InspectExchange checks that an exchange exists: NOT_FOUND when it does not.
// The default exchange always exists.
func (c *connection) InspectExchange(ctx context.Context, name string) error {
	return c.locked(ctx, fmt.Sprintf("inspect exchange %q", name), func(b *Broker) error {
		if _, ok := b.exchanges[name]; !ok && name != "" {
			return notFound("no exchange '%s' in vhost '/'", name)
		}
		return nil
	})
}

func (c *connection) exclusiveCheckLocked(q *queue) error {
	if q.options.Exclusive && q.owner != nil && q.owner != c {
		return resourceLocked("cannot obtain exclusive access to locked queue '%s' in vhost '/'. It could be originally declared on another connection or the exclusive property value does not match that of the original declaration.", q.name)
	}
	return nil
}

// locked runs f under the broker lock on an open connection, naming op in a refusal.
func (c *connection) locked(ctx context.Context, op string, f func(*Broker) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}
	b := c.broker
	b.mu.Lock()
	defer b.unlock()
	if err := c.usableLocked(); err != nil {
		return err
	}
	return c.refusedAs(op, f(b))
}

// refusedAs names op on a refusal.
func (c *connection) refusedAs(op string, err error) error {
	if refused, ok := err.(*messaging.BrokerError); ok && refused.Op == "" {
		named := *refused
		named.Op = op
		return &named
	}
	return err
}
