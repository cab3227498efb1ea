package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// What a failed publish leaves in a row: its attempts and last error, set
// aside to be tried again, or retired.

// retire sets a row that can never be published aside for good, at once.
func (p *processor) retire(ctx context.Context, r row, cause error) {
	o := p.outbox
	if !p.record(ctx, r, r.attempts+1, cause, true, 0) {
		return
	}
	o.config.logger.Warn(fmt.Sprintf("Retired message [%d] at once: it can never be published [%v]. It stays in the outbox table: fix the row or raise the limit, then %s.", r.id, cause, p.releaseHint(r.id)),
		"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "topic", r.dispatch.Topic, "error", cause)
}

// fail counts a failure that is the row's own, and sets the row aside to be
// tried again after the retry policy's delay, or retires it when the policy
// gives up (its MaxAttempts, or its age limit counted from the commit).
func (p *processor) fail(ctx context.Context, r row, cause error) {
	o := p.outbox
	attempts := r.attempts + 1
	decision := o.config.policy.Decide(attempts, r.created, time.Now())
	if !decision.Retry {
		if p.record(ctx, r, attempts, cause, true, 0) {
			p.retired(r, attempts, cause)
		}
		return
	}
	wait := o.config.policy.Delay(attempts, nil)
	if p.record(ctx, r, attempts, cause, false, wait) {
		o.config.logger.Warn(fmt.Sprintf("Message [%d] failed to publish [%v]; attempt [%d] of [%d] counted. The rows behind it move on; it is tried again in [%s].", r.id, cause, attempts, o.config.policy.MaxAttempts(), wait),
			"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "attempts", attempts, "error", cause, "retry", wait)
	}
}

// retired tells the operator that r was retired, why, and what to do.
func (p *processor) retired(r row, attempts int, cause error) {
	what, todo := diagnosis(r.dispatch, cause)
	p.outbox.config.logger.Warn(fmt.Sprintf("Retired message [%d] after [%d] failed publish attempt(s): %s. It stays in the outbox table: %s, then %s.", r.id, attempts, what, todo, p.releaseHint(r.id)),
		"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "topic", r.dispatch.Topic, "routing_key", r.dispatch.RoutingKey,
		"attempts", attempts, "error", cause)
}

// releaseHint says how an operator puts a retired row back.
func (p *processor) releaseHint(id int64) string {
	return fmt.Sprintf("release it with `warrenmq outbox release -table %s %d` (or sqlmq.Admin.Release)", p.outbox.config.table, id)
}

// diagnosis reads a row's last failure for an operator: what happened to
// the message, and what to fix before releasing it.
func diagnosis(d messaging.Dispatch, cause error) (what, todo string) {
	switch {
	case errors.Is(cause, messaging.ErrNotFound):
		return fmt.Sprintf("exchange %q does not exist", d.Topic), "declare the exchange"
	case errors.Is(cause, messaging.ErrUnroutable):
		return fmt.Sprintf("no queue is bound to exchange %q for routing key %q, and the outbox publishes mandatory", d.Topic, d.RoutingKey),
			fmt.Sprintf("bind the queue that should receive it (or, if messages to %q may reach no queue, name it in sqlmq.Options.DropUnroutable)", d.Topic)
	case errors.Is(cause, messaging.ErrPreconditionFailed):
		return "the broker refused it (406 PRECONDITION_FAILED, such as a payload over its max_message_size)", "make the message fit or raise the broker's limit"
	case errors.Is(cause, messaging.ErrRefused):
		return "the broker nacked it every time (a queue that is full and rejects publishes, say)", "make room in the queue it is routed to"
	}
	return fmt.Sprintf("its publish failed [%v]", cause), "fix the cause"
}

// setAside records a failed publish of r without retiring it: the row leaves
// this processor's hands and the sweep takes it again after RetryDelay.
func (p *processor) setAside(ctx context.Context, r row, attempts int, cause error) bool {
	return p.record(ctx, r, attempts, cause, false, p.outbox.config.retry)
}

// record stores a row's failed publish: its attempts and last error, and
// either its retirement or when it may be tried again (after wait). The row
// leaves this processor's hands either way. When the statement fails, the row
// keeps its lease and is published again when the lease expires.
func (p *processor) record(ctx context.Context, r row, attempts int, cause error, retire bool, wait time.Duration) bool {
	o := p.outbox
	now := time.Now()
	var retired, retryAt time.Time
	if retire {
		retired = now
	} else {
		retryAt = now.Add(wait)
		p.due.arm(retryAt)
	}
	o.forget([]row{r})
	if err := o.store.recordFailure(ctx, r.id, attempts, cause.Error(), retired, retryAt); err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to record the failed publish of message [%d] in durable storage [%v]; it is published again when its lease expires.", r.id, err), "id", r.id, "error", err)
		}
		return false
	}
	if retire {
		o.config.monitor.MessageRetired(1)
	}
	return true
}
