package deadletter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wait"
	"github.com/warrenmq/messaging/internal/wire"
	"github.com/warrenmq/messaging/retrypolicy"
)

// The settlement of single deliveries: the root verbs (messaging.Accept,
// Reject, Park, Retry, InProgress) land in Settle below, through the
// messaging.Settler the decorator puts in the context it hands on. Each
// republishes the delivery and returns nil once the broker confirmed and
// routed the copy; the delivery is then acknowledged with its batch when
// Handle returns. On error the delivery must not be acknowledged: the caller
// may panic, or simply return, because the decorator notices the failure and
// panics for it after the inner handler returns, so the broker redelivers
// the batch.
//
// A delivery is settled at most once per Handle: when an inner retry
// decorator re-runs the batch and the handler settles the same delivery
// again, the verb returns nil without publishing another copy.
//
// Reject dead-letters to {queue}.dlq with the reason "the handler rejected
// it: <err>"; Park sets aside in {queue}.parked ("the handler parked it:
// <err>").
//
// Retry republishes the delivery to its queue with x-acemq-attempt advanced,
// after the wait the policy gives for its attempt. A wait the policy holds in
// the broker (retrypolicy.Policy.InBroker: at or above its broker-wait
// threshold, never when that is zero) is held by the rung of the policy's
// ladder, {queue}.retry.{d}, when the connection implements Declarer. When it
// does not, or the rung cannot be declared or reached, the wait is held here
// only if it is no longer than the threshold; a longer wait is not held in
// the process (that would keep a prefetch slot for minutes): Retry returns an
// error, the decorator panics and the broker redelivers the delivery. An
// error marked messaging.Fatal dead-letters at once ("the handler reported
// an unprocessable message: <err>"), and so does a delivery whose attempt has
// reached the policy's budget ("exhausted N attempts: <err>") or, with a
// policy that sets GiveUpAfter, whose age exceeds it. An error for which
// messaging.IsOutage is true (a dependency's failure) spends no attempt and
// is never dead-lettered: the copy keeps the delivery's attempt.
//
// InProgress republishes the delivery to its queue after a delay, with the
// attempt unchanged; the policy's attempts and age are not consulted (it is
// never dead-lettered for it). A delay up to the broker-wait threshold is
// held here, bounded by the context; a longer one is held by the broker in a
// retry rung, as a retry wait is, so no worker sleeps for minutes.

// retry is Retry's work.
func (c *call) retry(ctx context.Context, delivery messaging.Delivery, err error) error {
	if c.isSettled(delivery) {
		return nil
	}
	queue := delivery.SourceQueue
	if err != nil && messaging.IsFatal(err) {
		return c.setAside(ctx, delivery, wire.DeadLetterQueue(queue), ActionDeadLettered, unprocessable(err))
	}
	attempt := max(delivery.Attempt, 1)
	outage := err != nil && messaging.IsOutage(err)
	if budget := c.config.attempts(); !outage && attempt >= budget {
		reason := noReason
		if err != nil {
			reason = exhausted(budget, err.Error())
		}
		return c.setAside(ctx, delivery, wire.DeadLetterQueue(queue), ActionDeadLettered, reason)
	}
	if !outage && c.config.policyStated && c.config.policy.MaxAge() > 0 {
		// The attempts passed above, so the only reason left is the age.
		if decision := c.config.policy.Decide(1, delivery.FirstSeen, time.Now()); !decision.Retry {
			reason := noReason
			if err != nil {
				reason = decision.Reason + ": " + err.Error()
			}
			return c.setAside(ctx, delivery, wire.DeadLetterQueue(queue), ActionDeadLettered, reason)
		}
	}
	dispatch := delivery.Redispatch(queue)
	dispatch.Attempt = attempt + 1
	if outage {
		dispatch.Attempt = attempt // an outage spends no attempt
	}
	dispatch.Error = ""
	delay, inBroker := c.config.wait(attempt)
	return c.republishAfter(ctx, delivery, dispatch, delay, inBroker, ActionRetried)
}

// republishAfter republishes dispatch, delivery's copy, once delay has passed:
// in a broker rung when inBroker (a rung that cannot be used falls back to the
// process only within the broker-wait threshold; a longer wait fails the
// settlement, so the broker redelivers the message), else in the process.
func (c *call) republishAfter(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch, delay time.Duration, inBroker bool, action string) error {
	queue := delivery.SourceQueue
	if inBroker {
		rung := c.config.rungFor(queue, delay)
		rungErr := c.throughRung(ctx, delivery, dispatch, rung, action)
		if rungErr == nil {
			return nil
		}
		c.config.monitor.Settled(queue, ActionRungMissing, bounded(fmt.Sprintf("retry rung %s: %v", rung.Name, rungErr)))
		threshold := c.config.policy.BrokerWaitThreshold()
		if delay > threshold {
			return c.fail(delivery, fmt.Errorf("deadletter: the %s wait before republishing message %s cannot be held by the broker (%w) and is longer than the policy's broker-wait threshold (%s, retrypolicy.Policy.WaitInBrokerFrom), so it is not held in the process; the message is not acknowledged and the broker will redeliver it: let the transport's connection declare retry rungs or shorten the wait",
				delay, delivery.MessageID, rungErr, threshold))
		}
		c.config.logger.Warn(fmt.Sprintf("Retry rung [%s] is unavailable [%v]; waiting [%s] in the process instead.", rung.Name, rungErr, delay),
			slog.String("queue", queue), slog.String("rung", rung.Name), slog.Duration("delay", delay), slog.Any("error", rungErr))
	}
	return c.afterWait(ctx, delivery, dispatch, delay, action)
}

// inProgress is InProgress's work.
func (c *call) inProgress(ctx context.Context, delivery messaging.Delivery, delay time.Duration) error {
	dispatch := delivery.Redispatch(delivery.SourceQueue)
	dispatch.Error = ""
	delay = max(delay, 0)
	return c.republishAfter(ctx, delivery, dispatch, delay, c.config.policy.InBroker(delay), ActionInProgress)
}

// afterWait waits in the process, then republishes.
func (c *call) afterWait(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch, delay time.Duration, action string) error {
	if c.isSettled(delivery) {
		return nil
	}
	if wait.For(ctx, delay) != nil {
		return c.fail(delivery, fmt.Errorf("deadletter: the %s wait before republishing message %s was cancelled, so it is not acknowledged and the broker will redeliver it: %w",
			delay, delivery.MessageID, context.Cause(ctx)))
	}
	if err := c.republish(ctx, delivery, dispatch); err != nil {
		return err
	}
	c.markSettled(delivery, action, "")
	c.config.monitor.Settled(delivery.SourceQueue, action, "")
	return nil
}

// fail records err as a settlement failure, so the batch is not acknowledged,
// and returns it.
func (c *call) fail(delivery messaging.Delivery, err error) error {
	c.markFailed(delivery, err)
	c.config.monitor.Settled(delivery.SourceQueue, ActionSetAsideFailed, err.Error())
	c.config.logger.Warn(fmt.Sprintf("Unable to settle message [%s] from [%s] [%v]; it was not acknowledged and the broker will redeliver it.",
		delivery.MessageID, delivery.SourceQueue, err),
		slog.String("queue", delivery.SourceQueue), slog.String("message_id", delivery.MessageID), slog.Any("error", err))
	return err
}

// throughRung hands the wait to the broker: it publishes to the rung, which
// dead-letters the message back to its queue when the TTL expires. It returns
// why not when the rung cannot be used, leaving the decision to the caller.
func (c *call) throughRung(ctx context.Context, delivery messaging.Delivery, dispatch messaging.Dispatch, rung retrypolicy.Rung, action string) error {
	if c.isSettled(delivery) {
		return nil
	}
	queue := delivery.SourceQueue
	publishCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.config.publishTimeout)
	defer cancel()
	err := c.publisher.declareRung(publishCtx, queue, rung.Name, rung.TTL)
	if err == nil {
		dispatch.RoutingKey = rung.Name
		err = c.publisher.publish(publishCtx, dispatch)
	}
	if err != nil {
		return err
	}
	c.markSettled(delivery, action, "")
	c.config.monitor.Settled(queue, action, "")
	return nil
}

// Settle is the messaging.Settler the decorator puts in the context it hands
// on: the root vocabulary (messaging.Accept, Reject, Park, Retry, InProgress)
// lands here. With Options.RefuseRetry, Retry and InProgress park the
// delivery instead, with the reason.
func (c *call) Settle(ctx context.Context, delivery messaging.Delivery, decision messaging.Decision) error {
	queue := delivery.SourceQueue
	switch decision.Verdict {
	case messaging.Accepted:
		if !c.isSettled(delivery) {
			c.markSettled(delivery, ActionAccepted, "")
			c.config.monitor.Settled(queue, ActionAccepted, "")
		}
		return nil
	case messaging.Rejected:
		return c.setAside(ctx, delivery, wire.DeadLetterQueue(queue), ActionDeadLettered, rejected(decision.Reason))
	case messaging.Parked:
		return c.setAside(ctx, delivery, wire.ParkedQueue(queue), ActionParked, parked(decision.Reason))
	case messaging.Retried, messaging.InProgressed:
		if c.config.refuseRetry != "" {
			return c.setAside(ctx, delivery, wire.ParkedQueue(queue), ActionParked, refusedReason(decision, c.config.refuseRetry))
		}
		if decision.Verdict == messaging.Retried {
			return c.retry(ctx, delivery, decision.Reason)
		}
		return c.inProgress(ctx, delivery, decision.Delay)
	default:
		return fmt.Errorf("deadletter: cannot settle message %s with the verdict %q: use Accept, Reject, Park, Retry or InProgress", delivery.MessageID, decision.Verdict)
	}
}

// Decided reports what was decided for delivery in this Handle and what it
// became (a Retry the budget ended reads Rejected; a refused one, Parked).
func (c *call) Decided(delivery messaging.Delivery) (messaging.Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	decision, ok := c.decisions[keyOf(delivery)]
	return decision, ok
}

// verdictOf maps a monitor action onto the root vocabulary.
func verdictOf(action string) messaging.Verdict {
	switch action {
	case ActionAccepted:
		return messaging.Accepted
	case ActionDeadLettered:
		return messaging.Rejected
	case ActionParked:
		return messaging.Parked
	case ActionRetried:
		return messaging.Retried
	case ActionInProgress:
		return messaging.InProgressed
	default:
		return messaging.Undecided
	}
}
