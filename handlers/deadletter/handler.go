package deadletter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/warrenmq/messaging"
)

// handler is the settlement decorator New returns.
type handler struct {
	inner     messaging.Handler
	config    config
	publisher *publisher
}

// New wraps inner with settlement. connector is the raw transport the
// set-aside copies are published through.
func New(connector messaging.Connector, inner messaging.Handler, options ...option) messaging.Handler {
	return &handler{inner: inner, config: newConfig(options), publisher: newPublisher(connector)}
}

// Handle parks undecodable deliveries, hands the rest to the inner handler and,
// when that panics, isolates and dead-letters the messages that still fail. It
// panics (so the batch is not acknowledged) when a republish fails, and
// re-raises a failure that happened while ctx was cancelled.
func (h *handler) Handle(ctx context.Context, messages ...any) {
	deliveries := deliveriesOf(messages)
	c := &call{handler: h, settled: map[deliveryKey]bool{}}
	ctx = context.WithValue(ctx, callKey{}, c)

	var rest []messaging.Delivery
	for _, delivery := range deliveries {
		switch {
		case delivery.Undecodable == nil:
			rest = append(rest, delivery)
		case errors.Is(delivery.Undecodable, messaging.ErrFiltered):
			// acknowledged without handling
		default:
			reason := undecodable(delivery.Undecodable)
			if err := c.setAside(ctx, delivery, delivery.SourceQueue+".parked", ActionParked, reason); err != nil {
				panic(err)
			}
		}
	}
	if len(rest) == 0 {
		return
	}

	value, panicked := c.run(ctx, rest)
	c.mustNotHaveFailed()
	if panicked {
		if ctx.Err() != nil {
			panic(value) // the failure is the shutdown's, not the message's
		}
		if len(rest) == 1 {
			if !c.isSettled(rest[0]) {
				c.giveUp(ctx, rest[0], value)
			}
		} else {
			c.isolate(ctx, rest)
		}
	}
	for _, delivery := range rest {
		if !c.isSettled(delivery) {
			h.config.monitor.Settled(delivery.SourceQueue, ActionAccepted, "")
		}
	}
}

// isolate runs each message of a failed batch alone and sets aside the ones
// that still fail.
func (c *call) isolate(ctx context.Context, deliveries []messaging.Delivery) {
	for _, delivery := range deliveries {
		if c.isSettled(delivery) {
			continue
		}
		value, panicked := c.run(ctx, []messaging.Delivery{delivery})
		c.mustNotHaveFailed()
		if !panicked {
			continue
		}
		if ctx.Err() != nil {
			panic(value)
		}
		c.giveUp(ctx, delivery, value)
	}
}

// deliveriesOf insists on messaging.Delivery values: anything else is a wiring
// mistake.
func deliveriesOf(messages []any) []messaging.Delivery {
	deliveries := make([]messaging.Delivery, 0, len(messages))
	for _, message := range messages {
		switch delivery := message.(type) {
		case messaging.Delivery:
			deliveries = append(deliveries, delivery)
		case *messaging.Delivery:
			deliveries = append(deliveries, *delivery)
		default:
			panic(fmt.Sprintf("deadletter: the handler received a %T, not a messaging.Delivery; "+
				"set streaming.SubscriptionOptions.FullDeliveryToHandler(true) on the subscription", message))
		}
	}
	return deliveries
}

type callKey struct{}

type deliveryKey struct {
	id        uint64
	messageID string
}

func keyOf(delivery messaging.Delivery) deliveryKey {
	return deliveryKey{id: delivery.DeliveryID, messageID: delivery.MessageID}
}

// call is the state of one Handle: which deliveries were settled through the
// context, and whether a republish failed.
type call struct {
	*handler
	mu      sync.Mutex
	settled map[deliveryKey]bool
	failure error
}

func callFrom(ctx context.Context) (*call, error) {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		return nil, errors.New("deadletter: no settlement decorator in this context; wrap the subscription's handler with deadletter.New and pass the context Handle received")
	}
	return c, nil
}

func (c *call) isSettled(delivery messaging.Delivery) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.settled[keyOf(delivery)]
}

func (c *call) markSettled(delivery messaging.Delivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled[keyOf(delivery)] = true
}

func (c *call) markFailed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failure == nil {
		c.failure = err
	}
}

// mustNotHaveFailed panics when a settlement through the context failed, so
// the batch is not acknowledged even if the inner handler ignored the error.
func (c *call) mustNotHaveFailed() {
	c.mu.Lock()
	err := c.failure
	c.mu.Unlock()
	if err != nil {
		panic(err)
	}
}

// run hands deliveries to the inner handler and recovers a panic.
func (c *call) run(ctx context.Context, deliveries []messaging.Delivery) (value any, panicked bool) {
	messages := make([]any, 0, len(deliveries))
	for _, delivery := range deliveries {
		if c.config.fullDelivery {
			messages = append(messages, delivery)
		} else {
			messages = append(messages, delivery.Message)
		}
	}
	returned := false
	defer func() {
		if !returned {
			value = recover()
			panicked = true
		}
	}()
	c.inner.Handle(ctx, messages...)
	returned = true
	return nil, false
}

// giveUp dead-letters a delivery whose handling panicked with value; it panics
// when the republish fails.
func (c *call) giveUp(ctx context.Context, delivery messaging.Delivery, value any) {
	reason := c.failureReason(value)
	if err := c.setAside(ctx, delivery, delivery.SourceQueue+".dlq", ActionDeadLettered, reason); err != nil {
		panic(err)
	}
}

// failureReason words a panic value that escaped the inner handler.
func (c *call) failureReason(value any) string {
	err, isError := value.(error)
	if isError && messaging.IsFatal(err) {
		return unprocessable(err)
	}
	text := fmt.Sprint(value)
	if isError {
		text = err.Error()
	}
	if c.config.maxAttempts > 0 {
		return exhausted(c.config.maxAttempts, text)
	}
	return "the handler failed: " + text
}

// setAside republishes delivery to target with reason and records the
// outcome.
// It publishes nothing for a delivery already settled in this Handle. The
// copy has no per-message TTL (as with RabbitMQ's own dead-lettering), so it
// stays in the .dlq or .parked queue until an operator acts on it.
func (c *call) setAside(ctx context.Context, delivery messaging.Delivery, target, action, reason string) error {
	if c.isSettled(delivery) {
		return nil
	}
	dispatch := delivery.Redispatch(target)
	dispatch.Error = reason
	dispatch.Expiration = 0
	if err := c.republish(ctx, delivery, dispatch); err != nil {
		return err
	}
	c.markSettled(delivery)
	c.config.monitor.Settled(delivery.SourceQueue, action, reason)
	c.config.logger.Warn(fmt.Sprintf("Set aside message [%s] from [%s] to [%s]: %s", delivery.MessageID, delivery.SourceQueue, target, reason),
		slog.String("queue", delivery.SourceQueue), slog.String("target", target), slog.String("action", action),
		slog.String("message_id", delivery.MessageID), slog.String("reason", reason))
	return nil
}

// republish publishes within the publish timeout, detached from the handler's
// cancellation; on failure it records the failure, so the batch is not
// acknowledged, and returns it.
func (c *call) republish(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch) error {
	publishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.config.publishTimeout)
	defer cancel()
	err := c.publisher.publish(publishCtx, dispatch)
	if err == nil {
		return nil
	}
	err = fmt.Errorf("deadletter: message %s from %q was not republished to %q, so it is not acknowledged and the broker will redeliver it: %w",
		delivery.MessageID, delivery.SourceQueue, dispatch.RoutingKey, err)
	c.markFailed(err)
	c.config.monitor.Settled(delivery.SourceQueue, ActionSetAsideFailed, err.Error())
	c.config.logger.Warn(fmt.Sprintf("Unable to republish message [%s] from [%s] to [%s] [%v]; it was not acknowledged and the broker will redeliver it.",
		delivery.MessageID, delivery.SourceQueue, dispatch.RoutingKey, err),
		slog.String("queue", delivery.SourceQueue), slog.String("target", dispatch.RoutingKey), slog.Any("error", err))
	return err
}
