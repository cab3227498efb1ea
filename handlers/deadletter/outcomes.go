package deadletter

import (
	"context"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
)

// The per-message outcomes below are for an inner handler given full
// deliveries (Options.FullDelivery(true)). Each republishes the delivery and
// returns nil once the broker confirmed and routed the copy; the delivery is
// then acknowledged with its batch when Handle returns. On error the delivery
// must not be acknowledged: the caller may panic, or simply return, because
// the decorator notices the failure and panics for it after the inner handler
// returns, so the broker redelivers the batch. ctx must be (derived from) the
// context the decorator passed to the inner handler.

// Reject dead-letters delivery to {queue}.dlq with the reason
// "the handler rejected it: <err>".
func Reject(ctx context.Context, delivery messaging.Delivery, err error) error {
	c, lookupErr := callFrom(ctx)
	if lookupErr != nil {
		return lookupErr
	}
	return c.setAside(ctx, delivery, delivery.SourceQueue+".dlq", ActionDeadLettered, rejected(err))
}

// Park sets delivery aside in {queue}.parked with the reason
// "the handler parked it: <err>".
func Park(ctx context.Context, delivery messaging.Delivery, err error) error {
	c, lookupErr := callFrom(ctx)
	if lookupErr != nil {
		return lookupErr
	}
	return c.setAside(ctx, delivery, delivery.SourceQueue+".parked", ActionParked, parked(err))
}

// Retry republishes delivery to its queue with x-acemq-attempt advanced, after
// the wait Options.RetryDelay gives for its attempt. A wait at or above
// Options.BrokerWaitThreshold is held by the broker in a {queue}.retry.{d}
// rung when the transport's connection implements Declarer; otherwise (or when
// the rung cannot be declared or reached) it is held here, bounded by ctx. An
// error marked messaging.Fatal dead-letters at once ("the handler reported an
// unprocessable message: <err>"), and so does a delivery whose attempt has
// reached Options.MaxAttempts ("exhausted N attempts: <err>").
func Retry(ctx context.Context, delivery messaging.Delivery, err error) error {
	c, lookupErr := callFrom(ctx)
	if lookupErr != nil {
		return lookupErr
	}
	queue := delivery.SourceQueue
	if err != nil && messaging.IsFatal(err) {
		return c.setAside(ctx, delivery, queue+".dlq", ActionDeadLettered, unprocessable(err))
	}
	attempt := max(delivery.Attempt, 1)
	if c.config.maxAttempts > 0 && attempt >= c.config.maxAttempts {
		reason := noReason
		if err != nil {
			reason = exhausted(c.config.maxAttempts, err.Error())
		}
		return c.setAside(ctx, delivery, queue+".dlq", ActionDeadLettered, reason)
	}
	dispatch := delivery.Redispatch(queue)
	dispatch.Attempt = attempt + 1
	dispatch.Error = ""
	delay := max(c.config.retryDelay(attempt), 0)
	if delay >= c.config.brokerWaitThreshold && c.throughRung(ctx, delivery, dispatch, delay) {
		return nil
	}
	return c.afterWait(ctx, delivery, dispatch, delay, ActionRetried)
}

// InProgress republishes delivery to its queue after delay, with the attempt
// unchanged; the retry policy is not consulted. The wait is held here, bounded
// by ctx.
func InProgress(ctx context.Context, delivery messaging.Delivery, delay time.Duration) error {
	c, lookupErr := callFrom(ctx)
	if lookupErr != nil {
		return lookupErr
	}
	dispatch := delivery.Redispatch(delivery.SourceQueue)
	dispatch.Error = ""
	return c.afterWait(ctx, delivery, dispatch, max(delay, 0), ActionInProgress)
}

// afterWait waits in the process, then republishes.
func (c *call) afterWait(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch, delay time.Duration, action string) error {
	if delay > 0 && !c.config.sleep(ctx, delay) {
		err := fmt.Errorf("deadletter: the %s wait before republishing message %s was cancelled, so it is not acknowledged and the broker will redeliver it: %w",
			delay, delivery.MessageID, context.Cause(ctx))
		c.markFailed(err)
		c.config.monitor.Settled(delivery.SourceQueue, ActionSetAsideFailed, err.Error())
		return err
	}
	if err := c.republish(ctx, delivery, dispatch); err != nil {
		return err
	}
	c.markSettled(delivery)
	c.config.monitor.Settled(delivery.SourceQueue, action, "")
	return nil
}

// throughRung hands the wait to the broker: it publishes to the rung, which
// dead-letters the message back to its queue when the TTL expires. It reports
// false, leaving the wait to the process, when the rung cannot be used.
func (c *call) throughRung(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch, delay time.Duration) bool {
	queue := delivery.SourceQueue
	rung := RungName(queue, delay)
	publishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.config.publishTimeout)
	defer cancel()
	err := c.publisher.declareRung(publishCtx, queue, delay)
	if err == nil {
		dispatch.RoutingKey = rung
		err = c.publisher.publish(publishCtx, dispatch)
	}
	if err != nil {
		c.config.logger.Warn(fmt.Sprintf("Retry rung [%s] is unavailable [%v]; waiting [%s] in the process instead.", rung, err, delay))
		return false
	}
	c.markSettled(delivery)
	c.config.monitor.Settled(queue, ActionRetried, "")
	return true
}
