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

// declareStreamTopology declares what config asks for (wire.TopologyOf, in
// its order). Nothing that exists is changed: a queue or exchange another
// library declared differently is used as it is, and a queue is not bound to
// an exchange whose declaration was refused (the key would mean something
// else on it).
//
// It starts on *ch and leaves in *ch the channel to go on with (nil when a
// refusal closed the last one): the caller closes it, on error too.
func (c *connection) declareStreamTopology(ctx context.Context, ch *adapter.Channel, config messaging.StreamConfig) error {
	steps, err := wire.TopologyOf(config)
	if err != nil {
		return err
	}
	t := &topologyDeclarer{conn: c, ctx: ctx, ch: *ch}
	defer func() { *ch = t.ch }()
	return steps.Declare(t)
}

// Exchange declares x, tolerating one that exists with other properties.
func (t *topologyDeclarer) Exchange(x messaging.Exchange, unbound string) (bool, error) {
	return t.tolerate(fmt.Sprintf("declare exchange %q", x.Name), unbound, declareExchange(x))
}

// Queue declares q, tolerating one that exists with other properties.
func (t *topologyDeclarer) Queue(q messaging.Queue) error {
	_, err := t.tolerate(fmt.Sprintf("declare queue %q", q.Name), "", declareQueue(q))
	return err
}

// Bind binds a queue to an exchange.
func (t *topologyDeclarer) Bind(b messaging.Binding) error {
	_, err := t.step(bindingStep(b), false, bind(b))
	return err
}
