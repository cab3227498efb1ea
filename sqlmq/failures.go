package sqlmq

import (
	"context"
	"fmt"
	"time"

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
	o.config.logger.Warn(fmt.Sprintf("Retired message [%d] at once: it can never be published [%v]; it stays in durable storage until an operator fixes and releases it.", r.id, cause),
		"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "error", cause)
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
			p.retired(r.id, r.dispatch.MessageID, attempts, cause)
		}
		return
	}
	wait := o.config.policy.Delay(attempts, nil)
	if p.record(ctx, r, attempts, cause, false, wait) {
		o.config.logger.Warn(fmt.Sprintf("Message [%d] failed to publish [%v]; attempt [%d] of [%d] counted. The rows behind it move on; it is tried again in [%s].", r.id, cause, attempts, o.config.policy.MaxAttempts(), wait),
			"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "attempts", attempts, "error", cause, "retry", wait)
	}
}

func (p *processor) retired(id int64, messageID string, attempts int, cause error) {
	p.outbox.config.logger.Warn(fmt.Sprintf("Retired message [%d] after [%d] refused publish attempt(s) [%v]; it stays in durable storage until an operator releases it.", id, attempts, cause),
		"id", id, "message_id", wire.Shorten(messageID), "attempts", attempts, "error", cause)
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
