package sqlmq

import (
	"context"
	"fmt"
	"time"
)

// What the processor reads back from the table: the rows earlier runs left
// (startup recovery), the rows no live instance holds (the lease sweep), the
// rows handoffs left while the channel was full (catch-up passes, a page read
// ahead while the one before is published), and the pruning of old rows.

// recover publishes, a page at a time, the rows earlier runs left behind.
func (p *processor) recover(ctx context.Context) {
	o := p.outbox
	found, err := o.store.countPending(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to read undispatched message(s) from durable storage [%v]; the sweep tries again in [%s].", err, o.config.sweep),
				"error", err, "retry", o.config.sweep)
		}
		return
	}
	o.config.logger.Info(fmt.Sprintf("Startup recovery found [%d] undispatched message(s) in durable storage.", found), "found", found)
	for found > 0 && ctx.Err() == nil && p.sweep(ctx) {
	}
}

// sweep claims a page of rows no live instance holds (their lease expired,
// or they were set aside and are due) and publishes it. It reports whether the
// page was full (so there may be more).
func (p *processor) sweep(ctx context.Context) bool {
	found, err := p.claim(ctx)
	if err != nil {
		if ctx.Err() == nil {
			o := p.outbox
			o.config.logger.Warn(fmt.Sprintf("Unable to read undispatched message(s) from durable storage [%v]; the sweep tries again in [%s].", err, o.config.sweep),
				"error", err, "retry", o.config.sweep)
		}
		return false
	}
	return found == p.outbox.config.pageSize
}

// catchUp publishes a page of the rows handoffs left in the table while the
// channel was full (rows leased to this instance and not on their way), and
// resumes handoffs when there are none left. False means the table could not
// be read.
//
// A pass reads page after page in id order, each past the last, so it never
// waits for the marks of the pages before it. A read that finds nothing past
// the last ends the pass; the next pass starts from the first row once every
// mark has landed (it catches rows a transaction committed after others with
// higher ids), and when it finds none, handoffs resume.
func (p *processor) catchUp(ctx context.Context) bool {
	o := p.outbox
	o.beginCatchUp()
	if p.cursor == 0 {
		// From the first row, every row of ours still in the table must be
		// owed: let the marks of the rows published land first.
		p.marks.flush()
	}
	start := p.cursor
	rows, unreadable, err := p.readPage(ctx, start)
	if err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to read the message(s) committed while the dispatch processor's channel was full [%v]; retrying in [%s].", err, o.config.retry),
				"error", err, "retry", o.config.retry)
		}
		return false
	}
	p.retiredUnreadable(unreadable)
	for _, r := range rows {
		p.cursor = max(p.cursor, r.id)
	}
	for _, u := range unreadable {
		p.cursor = max(p.cursor, u.id)
	}
	if len(rows)+len(unreadable) == o.config.pageSize {
		// A full page: the next is likely there too. Reading it while this
		// one is published keeps the broker busy between pages.
		p.readAhead(ctx, p.cursor)
	}
	// Rows on their way do not count: a pass from the first row is over
	// when it finds none left behind.
	// A row committed just now whose handoff has not come yet is left to it:
	// read here too, it would be published twice. (The lease sweep does not
	// wait for it: a writer never committed or closed must not hold a row.)
	published := p.dispatchNew(ctx, o.withoutCommitting(rows)) + len(unreadable)
	switch {
	case published > 0 || (start > 0 && len(rows) > 0):
		return true // the pass goes on past the cursor
	case start > 0:
		p.cursor = 0 // nothing past the cursor: the next pass starts from the first row
		return true
	}
	p.cursor = 0
	if o.resume() {
		o.config.logger.Info("The dispatch processor has published the message(s) committed while its channel was full; commits hand their messages to it again.")
	}
	return true
}

// readPage is the page of the rows leased to this instance past after: the one
// read ahead when it was read from there, else read now.
func (p *processor) readPage(ctx context.Context, after int64) ([]row, []unreadableRow, error) {
	if p.ahead != nil {
		read := <-p.ahead
		p.ahead = nil
		if read.after == after {
			return read.rows, read.unreadable, read.err
		}
		p.retiredUnreadable(read.unreadable) // retired by the read: still told
	}
	o := p.outbox
	return o.store.readOwn(ctx, o.config.owner, after, o.config.pageSize, time.Now())
}

// readAhead starts reading the page past after. Its goroutine ends when the
// read does (bounded by ctx); readPage or dropAhead takes its result.
func (p *processor) readAhead(ctx context.Context, after int64) {
	p.dropAhead()
	o := p.outbox
	ahead := make(chan pageRead, 1)
	p.ahead = ahead
	go func() {
		rows, unreadable, err := o.store.readOwn(ctx, o.config.owner, after, o.config.pageSize, time.Now())
		ahead <- pageRead{after: after, rows: rows, unreadable: unreadable, err: err}
		if o.config.readAhead != nil {
			o.config.readAhead(after)
		}
	}()
}

// dropAhead waits for a read ahead that will not be used and discards it,
// telling only of the rows it retired.
func (p *processor) dropAhead() {
	if p.ahead != nil {
		p.retiredUnreadable((<-p.ahead).unreadable)
		p.ahead = nil
	}
}

// claim leases a page of rows no live instance holds and publishes those not
// already on their way through the channel. It returns how many rows it
// found, on their way or not.
func (p *processor) claim(ctx context.Context) (int, error) {
	o := p.outbox
	rows, unreadable, err := o.store.claim(ctx, o.config.owner, time.Now(), o.config.lease, o.config.pageSize)
	if err != nil {
		return 0, err
	}
	p.retiredUnreadable(unreadable)
	p.dispatchNew(ctx, rows)
	return len(rows) + len(unreadable), nil
}

// retiredUnreadable reports the rows retired because they cannot be read back.
func (p *processor) retiredUnreadable(unreadable []unreadableRow) {
	o := p.outbox
	for _, u := range unreadable {
		o.config.logger.Warn(fmt.Sprintf("Retired message [%d]: it cannot be read back from durable storage [%v]. It stays in the outbox table: fix the row, then %s.", u.id, u.err, p.releaseHint(u.id)),
			"id", u.id, "error", u.err)
	}
	if len(unreadable) > 0 {
		o.config.monitor.MessageRetired(len(unreadable))
	}
}

// dispatchNew publishes the rows read from the table that are not already on
// their way through the channel, and returns how many it published.
func (p *processor) dispatchNew(ctx context.Context, rows []row) int {
	o := p.outbox
	fresh := rows[:0:0]
	for _, r := range rows {
		if !o.isExpected(r.id) {
			fresh = append(fresh, r)
		}
	}
	p.dispatch(ctx, fresh)
	return len(fresh)
}

// prune deletes one batch of rows dispatched longer ago than the retention and
// reports whether the batch was full.
func (p *processor) prune(ctx context.Context) bool {
	o := p.outbox
	n, err := o.store.prune(ctx, time.Now().Add(-o.config.retention), o.config.pruneBatch)
	if err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to prune dispatched message(s) from durable storage [%v].", err), "error", err)
		}
		return false
	}
	return n == o.config.pruneBatch
}
