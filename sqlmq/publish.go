package sqlmq

import (
	"context"
	"fmt"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// Publishing a batch: screening out what can never travel, publishing, and
// on a failure one row may have caused, publishing again in halves until the
// row at fault is alone; an outage is waited out in order.

// dispatch publishes rows until each is confirmed, set aside, retired, taken
// by another instance, or the context ends. No row holds up the others:
//
//   - a row that can never travel on AMQP (written by an older version, or by
//     hand) is retired before it is published;
//   - a publish that fails in a way one of its rows may have caused (the
//     broker closed the channel or the connection while publishing) is
//     repeated at once in halves, down to rows published alone, so the good
//     rows land and the row at fault is found;
//   - a row that fails on its own (the broker refused or nacked that message,
//     or it failed alone for a reason that is not an outage) is set aside in
//     the table with its error, counted, and tried again by the sweep after
//     its RetryPolicy's delay, while the rows behind it move on; it is
//     retired when the policy gives up;
//   - a row whose connection was lost while it was published alone is set
//     aside and tried again after RetryDelay, and not counted: a lost
//     connection is an outage, never a verdict on the message.
//
// Only when the broker cannot be used at all (unreachable, publishing paused)
// do the rows wait here, in order, RetryDelay at a time, and nothing is
// counted: an outage is not the messages' fault.
func (p *processor) dispatch(ctx context.Context, rows []row) {
	o := p.outbox
	var queue [][]row
	if rows = p.screen(ctx, rows); len(rows) > 0 {
		queue = append(queue, rows)
	}
	for len(queue) > 0 {
		if ctx.Err() != nil {
			o.forget(flatten(queue))
			return
		}
		group := queue[0]
		now := time.Now()
		if !p.leased(group, now) {
			kept, err := o.store.renew(ctx, o.config.owner, rowIDs(group), now.Add(o.config.lease))
			if err != nil {
				if !p.retryAfter(ctx, len(group), err) {
					o.forget(flatten(queue))
					return
				}
				continue
			}
			group = p.keep(group, kept)
			for i := range group {
				group[i].leaseUntil = now.Add(o.config.lease)
			}
		}
		queue = queue[1:]
		if len(group) == 0 {
			continue
		}
		owed, err := p.publish(ctx, group)
		switch {
		case len(owed) == 0:
		case held(ctx, err):
			owed = append(owed, flatten(queue)...)
			if !p.retryAfter(ctx, len(owed), err) {
				o.forget(owed)
				return
			}
			queue = [][]row{owed}
		default:
			half := (len(owed) + 1) / 2
			queue = append([][]row{owed[:half], owed[half:]}, queue...)
		}
	}
}

// publish writes group as one batch, settles what landed, and deals with each
// row that did not: it returns the rows still owed (to be published again,
// whole or in halves) and the publish's error.
func (p *processor) publish(ctx context.Context, group []row) ([]row, error) {
	o := p.outbox
	dispatches := make([]messaging.Dispatch, len(group))
	for i, r := range group {
		dispatches[i] = clone(r.dispatch)
		dispatches[i].Mandatory = !o.config.dropUnroutable[r.dispatch.Topic]
	}
	o.config.monitor.MessagePublished(len(group))
	_, err := p.publisher.Write(ctx, dispatches...)
	if err == nil {
		p.marks.mark(ctx, group)
		return nil, nil
	}
	outcomes := classify(group, err)
	var landed, owed []row
	for i, r := range group {
		if outcomes[i].verdict == confirmed {
			landed = append(landed, r)
		}
	}
	p.marks.mark(ctx, landed)
	if held(ctx, err) {
		for i, r := range group {
			if outcomes[i].verdict != confirmed {
				owed = append(owed, r)
			}
		}
		return owed, err
	}
	alone := len(group) == 1
	for i, r := range group {
		switch out := outcomes[i]; out.verdict {
		case unpublishable:
			p.retire(ctx, r, out.cause)
		case refused, nacked: // the broker answered about this message: it is up, and says no
			p.fail(ctx, r, out.cause)
		case lost:
			p.setAside(ctx, r, r.attempts, out.cause)
			o.config.logger.Warn(fmt.Sprintf("The connection to the broker was lost while message [%d] was published alone [%v]; the rows behind it move on, and it is tried again in [%s] (not counted as an attempt).", r.id, out.cause, o.config.retry),
				"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "error", out.cause, "retry", o.config.retry)
		case unknown:
			if alone {
				p.fail(ctx, r, out.cause) // not the broker's: it published nothing else
			} else {
				owed = append(owed, r)
			}
		}
	}
	return owed, err
}

// screen retires, before anything is published, the rows that can never
// travel on AMQP, and returns the others.
func (p *processor) screen(ctx context.Context, rows []row) []row {
	kept := rows[:0:0]
	for _, r := range rows {
		if err := wire.Check(r.dispatch, p.outbox.config.maxPayload); err != nil {
			p.retire(ctx, r, err)
			continue
		}
		kept = append(kept, r)
	}
	return kept
}

func flatten(groups [][]row) []row {
	var rows []row
	for _, g := range groups {
		rows = append(rows, g...)
	}
	return rows
}

// retryAfter logs a publish failure and waits RetryDelay; false means the
// context ended first.
func (p *processor) retryAfter(ctx context.Context, count int, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	o := p.outbox
	o.config.logger.Warn(fmt.Sprintf("Unable to publish [%d] message(s) to the transport [%v]; retrying in [%s].", count, err, o.config.retry),
		"count", count, "error", err, "retry", o.config.retry)
	return p.wait(ctx)
}

func (p *processor) wait(ctx context.Context) bool {
	select {
	case <-time.After(p.outbox.config.retry):
		return true
	case <-ctx.Done():
		return false
	}
}

func rowIDs(rows []row) []int64 {
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.id
	}
	return ids
}
