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

// topologyDeclarer runs declarations one step at a time on one channel: the
// stream's own when it declares a stream's topology, a channel of its own for
// each Declarer call (onChannel). In a stream's topology a declaration the
// broker refuses because what exists differs (406) is not an error: what
// exists is used as it is, one WARN names the difference in the broker's
// words, and the channel the refusal closed is replaced by a new one.
type topologyDeclarer struct {
	conn *connection
	ctx  context.Context
	ch   adapter.Channel
}

// step runs f bounded by the broker timeout. With tolerant, it reports false
// with a nil error when the broker refused f as differing from what exists.
func (t *topologyDeclarer) step(what string, tolerant bool, f func(adapter.Channel) error) (bool, error) {
	if err := t.ctx.Err(); err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	if t.ch == nil {
		ch, err := t.conn.openChannel(t.ctx)
		if err != nil {
			return false, fmt.Errorf("%s: %w", what, err)
		}
		t.ch = ch
	}
	err := t.conn.call(what, ErrConnectTimeout, func() error { return f(t.ch) })
	if err == nil {
		return true, nil
	}
	var refused *messaging.BrokerError
	if errors.As(err, &refused) {
		_ = t.conn.closeChannel(t.ch) // the refusal closed it; a later step opens another
		t.ch = nil
	}
	if tolerant && errors.Is(err, messaging.ErrPreconditionFailed) && refused != nil {
		return false, nil
	}
	if errors.As(err, &refused) {
		return false, err // it names the step already
	}
	return false, fmt.Errorf("%s: %w", what, err)
}

// tolerate is step for a declaration: a difference is logged, not returned.
func (t *topologyDeclarer) tolerate(what, consequence string, f func(adapter.Channel) error) (bool, error) {
	var broker string
	declared, err := t.step(what, true, func(ch adapter.Channel) error {
		err := f(ch)
		var amqpErr *amqp.Error
		if errors.As(err, &amqpErr) {
			broker = amqpErr.Reason
		}
		return err
	})
	if err == nil && !declared {
		message := fmt.Sprintf("AMQP %s: it already exists with other properties, so it is used as it is%s (broker: %s)", what, consequence, broker)
		t.conn.config.logger.Warn(message, "declaration", what, "difference", broker)
	}
	return declared, err
}

// declareStreamTopology declares what config asks for: with EstablishTopology
// the exchange of every binding (config.StreamBindings: a durable fanout per
// topic, a topic exchange for a binding that routes by key, others of their
// kinds), the source queue (config.SourceQueue and messaging.DeclaredQueue:
// type, lifetime, arguments, the AceMQ dead-letter arguments) and the
// bindings; with DeadLetters the acemq.dlx direct exchange and the classic
// durable {queue}.dlq and {queue}.parked bound to it on their own names.
// Nothing that exists is changed: a queue or exchange another library
// declared differently is used as it is, and a queue is not bound to an
// exchange whose declaration was refused (the key would mean something else
// on it).
//
// It starts on *ch and leaves in *ch the channel to go on with (nil when a
// refusal closed the last one): the caller closes it, on error too.
func (c *connection) declareStreamTopology(ctx context.Context, ch *adapter.Channel, config messaging.StreamConfig) error {
	t := &topologyDeclarer{conn: c, ctx: ctx, ch: *ch}
	defer func() { *ch = t.ch }()
	queue := config.StreamName
	if config.EstablishTopology {
		source, err := config.SourceQueue()
		if err != nil {
			return err
		}
		if source, err = messaging.DeclaredQueue(source); err != nil {
			return err
		}
		var bindable []messaging.StreamBinding
		for _, binding := range config.StreamBindings() {
			x := messaging.Exchange{Name: binding.Exchange, Kind: binding.Kind, Durable: true}
			if err := x.Validate(); err != nil {
				return fmt.Errorf("bind stream %q: %w", queue, err)
			}
			declared, err := t.tolerate(fmt.Sprintf("declare exchange %q", x.Name), fmt.Sprintf(", and queue %q is not bound to it with key %q; bind it yourself if nothing routes the messages there", queue, binding.Key), func(ch adapter.Channel) error {
				return ch.ExchangeDeclare(x.Name, string(x.Kind), true, false, false, false, nil)
			})
			if err != nil {
				return err
			}
			if declared {
				bindable = append(bindable, binding)
			}
		}
		if _, err := t.tolerate(fmt.Sprintf("declare queue %q", queue), "", func(ch adapter.Channel) error {
			_, err := ch.QueueDeclare(queue, source.Durable, source.AutoDelete, source.Exclusive, false, table(source.Arguments))
			return err
		}); err != nil {
			return err
		}
		for _, binding := range bindable {
			if _, err := t.step(fmt.Sprintf("bind queue %q to exchange %q with key %q", queue, binding.Exchange, binding.Key), false, func(ch adapter.Channel) error {
				return ch.QueueBind(queue, binding.Key, binding.Exchange, false, table(binding.Arguments))
			}); err != nil {
				return err
			}
		}
	}
	if !config.DeadLetters {
		return nil
	}
	exchangeDeclared, err := t.tolerate(fmt.Sprintf("declare exchange %q", wire.DeadLetterExchange), ", and nothing is bound to it", func(ch adapter.Channel) error {
		return ch.ExchangeDeclare(wire.DeadLetterExchange, amqp.ExchangeDirect, true, false, false, false, nil)
	})
	if err != nil {
		return err
	}
	for _, name := range []string{wire.DeadLetterQueue(queue), wire.ParkedQueue(queue)} {
		if _, err := t.tolerate(fmt.Sprintf("declare queue %q", name), "", func(ch adapter.Channel) error {
			_, err := ch.QueueDeclare(name, true, false, false, false, nil)
			return err
		}); err != nil {
			return err
		}
		if !exchangeDeclared {
			continue
		}
		if _, err := t.step(fmt.Sprintf("bind queue %q to exchange %q", name, wire.DeadLetterExchange), false, func(ch adapter.Channel) error {
			return ch.QueueBind(name, name, wire.DeadLetterExchange, false, nil)
		}); err != nil {
			return err
		}
	}
	return nil
}
