package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/internal/wire"
)

// processor is the dispatch processor: it publishes committed rows through the
// transport and marks them dispatched once the broker confirmed them.
type processor struct {
	outbox    *outbox
	started   atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	publisher publisher

	// Owned by Listen's goroutine:
	suspects     map[int64]suspect // failures waiting to be counted
	setAsideRows bool              // rows were set aside: arm the retry timer
	marks        *marker           // marks confirmed pages while the next is published
	// cursor is the highest id the current catch-up pass has read; zero
	// before a pass.
	cursor int64
	// ahead delivers the next page of a catch-up pass, read while the page
	// before it is published (nil when no read is on its way).
	ahead chan pageRead
}

// pageRead is one page of a catch-up pass: the rows past after.
type pageRead struct {
	after      int64
	rows       []row
	unreadable []unreadableRow
	err        error
}

// Listen publishes until Close is called or the process context ends: first
// the rows left undispatched by earlier runs (in pages), then what handlers
// commit, plus a periodic sweep for rows whose lease expired and a periodic
// prune of old dispatched rows. It may be called once.
func (p *processor) Listen() {
	if !p.started.CompareAndSwap(false, true) {
		return
	}
	defer close(p.done)
	o := p.outbox
	if o.config.err != nil {
		o.config.logger.Error(fmt.Sprintf("The outbox dispatch processor cannot start [%v].", o.config.err), "error", o.config.err)
		return
	}
	p.publisher = o.config.newPublisher()
	defer func() { _ = p.publisher.Close() }()
	p.marks = startMarker(p)
	defer p.marks.stop()
	defer p.dropAhead()
	ctx := o.ctx

	p.recover(ctx)
	sweep := o.config.clock.After(o.config.sweep)
	prune := o.config.clock.After(o.config.pruneEvery)
	var retry <-chan time.Time // set aside rows are due
	var pause <-chan time.Time // a failed read of the table is tried again
	busy := false
	for {
		if p.setAsideRows && retry == nil {
			retry = o.config.clock.After(o.config.retry)
		}
		p.setAsideRows = false
		// Rows a handoff left in the table go out once the channel, which
		// holds older rows, is empty.
		var catchUp <-chan time.Time
		if len(o.channel) == 0 && o.isSuspended() {
			catchUp = immediately
			if pause != nil {
				catchUp = pause
			}
		}
		select {
		case <-ctx.Done():
			return
		case first := <-o.channel:
			// A page read ahead is only good while nothing else publishes:
			// the rows it holds may be published here or by a sweep.
			p.dropAhead()
			rows := p.gather(ctx, first, busy)
			left := len(o.channel)
			p.dispatch(ctx, rows)
			// Rows that arrived while this batch was published are waiting
			// now: more are likely on their way, so the next batch lingers.
			busy = len(o.channel) > left
		case <-o.wake:
		case <-catchUp:
			pause = nil
			if !p.catchUp(ctx) {
				pause = o.config.clock.After(o.config.retry)
			}
		case <-retry:
			retry = nil
			p.dropAhead()
			sweep = p.after(o.config.sweep, p.sweep(ctx))
		case <-sweep:
			p.dropAhead()
			sweep = p.after(o.config.sweep, p.sweep(ctx))
		case <-prune:
			prune = p.after(o.config.pruneEvery, p.prune(ctx))
		}
	}
}

var immediately = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// after is the next timer: at once when the last round found a full page.
func (p *processor) after(d time.Duration, again bool) <-chan time.Time {
	if again {
		return immediately
	}
	return p.outbox.config.clock.After(d)
}

// lingerGap is the longest a lingering processor waits for the next row: a
// pause this long means the burst is over.
const lingerGap = time.Millisecond

// gather forms a batch from what the channel already holds. When busy (rows
// arrived while the previous batch was being published) it then lingers: it
// keeps taking rows while they arrive within lingerGap of each other, for up
// to Linger in all, so a steady stream of small commits is published and
// marked in fewer, larger batches. An idle processor never waits: a lone row
// is published at once.
func (p *processor) gather(ctx context.Context, first row, busy bool) []row {
	o := p.outbox
	rows := p.drain([]row{first})
	if !busy || len(rows) >= o.config.pageSize {
		return rows
	}
	deadline := o.config.clock.After(o.config.linger)
	gap := min(lingerGap, o.config.linger)
	for len(rows) < o.config.pageSize {
		select {
		case r := <-o.channel:
			rows = p.drain(append(rows, r))
		case <-o.config.clock.After(gap):
			return p.drain(rows)
		case <-deadline:
			return p.drain(rows)
		case <-ctx.Done():
			return rows
		}
	}
	return rows
}

// drain adds to rows what the channel holds, up to a page, without waiting.
func (p *processor) drain(rows []row) []row {
	for len(rows) < p.outbox.config.pageSize {
		select {
		case r := <-p.outbox.channel:
			rows = append(rows, r)
		default:
			return rows
		}
	}
	return rows
}

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
	published := p.dispatchNew(ctx, rows) + len(unreadable)
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
	return o.store.readOwn(ctx, o.config.owner, after, o.config.pageSize, o.config.clock.Now())
}

// readAhead starts reading the page past after. Its goroutine ends when the
// read does (bounded by ctx); readPage or dropAhead takes its result.
func (p *processor) readAhead(ctx context.Context, after int64) {
	p.dropAhead()
	o := p.outbox
	ahead := make(chan pageRead, 1)
	p.ahead = ahead
	go func() {
		rows, unreadable, err := o.store.readOwn(ctx, o.config.owner, after, o.config.pageSize, o.config.clock.Now())
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
	rows, unreadable, err := o.store.claim(ctx, o.config.owner, o.config.clock.Now(), o.config.lease, o.config.pageSize)
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
		o.config.logger.Warn(fmt.Sprintf("Retired message [%d]: it cannot be read back from durable storage [%v]; it stays there until an operator fixes and releases it.", u.id, u.err),
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
	n, err := o.store.prune(ctx, o.config.clock.Now().Add(-o.config.retention), o.config.pruneBatch)
	if err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to prune dispatched message(s) from durable storage [%v].", err), "error", err)
		}
		return false
	}
	return n == o.config.pruneBatch
}

// dispatch publishes rows until each is confirmed, set aside, retired, taken
// by another instance, or the context ends. No row holds up the others:
//
//   - a row that can never travel on AMQP (written by an older version, or by
//     hand) is retired before it is published;
//   - a publish that fails in a way one of its rows may have caused (the
//     broker closed the channel or the connection while publishing) is
//     repeated at once in halves, down to rows published alone, so the good
//     rows land and the row at fault is found;
//   - a row that fails on its own is set aside in the table with its error
//     and tried again by the sweep after RetryTimeout, while the rows behind
//     it move on. The failure is counted when it is the row's own (the broker
//     refused that message, or it failed alone and a later publish
//     succeeded), and the row is retired at MaxAttempts. A nack is never
//     counted.
//
// Only when the broker cannot be used at all (unreachable, publishing paused)
// do the rows wait here, in order, RetryTimeout at a time, and nothing is
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
		now := o.config.clock.Now()
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
			clear(p.suspects) // the broker's failure may have been theirs too
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
	}
	o.config.monitor.MessagePublished(len(group))
	_, err := p.publisher.Write(ctx, dispatches...)
	if err == nil {
		p.marks.mark(ctx, group)
		p.countSuspects(ctx)
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
	if len(landed) > 0 {
		p.countSuspects(ctx)
	}
	alone := len(group) == 1
	for i, r := range group {
		switch out := outcomes[i]; out.verdict {
		case unpublishable:
			p.retire(ctx, r, out.cause)
		case refused: // the broker answered about this message: it is up, and says no
			p.fail(ctx, r, out.cause)
		case passing:
			p.setAside(ctx, r, r.attempts, out.cause)
			o.config.logger.Warn(fmt.Sprintf("The broker could not take message [%d] now [%v]; it is tried again in [%s] (not counted as an attempt).", r.id, out.cause, o.config.retry),
				"id", r.id, "message_id", r.dispatch.MessageID, "error", out.cause, "retry", o.config.retry)
		case lost:
			p.setAside(ctx, r, r.attempts, out.cause)
			o.config.logger.Warn(fmt.Sprintf("The connection to the broker was lost while message [%d] was published alone [%v]; the rows behind it move on, and it is tried again in [%s] (not counted as an attempt).", r.id, out.cause, o.config.retry),
				"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "error", out.cause, "retry", o.config.retry)
		case unknown:
			if alone {
				p.suspect(ctx, r, out.cause)
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

// retire sets a row that can never be published aside for good, at once.
func (p *processor) retire(ctx context.Context, r row, cause error) {
	o := p.outbox
	if !p.record(ctx, r, r.attempts+1, cause, true) {
		return
	}
	o.config.logger.Warn(fmt.Sprintf("Retired message [%d] at once: it can never be published [%v]; it stays in durable storage until an operator fixes and releases it.", r.id, cause),
		"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "error", cause)
}

// fail counts a failure that is the row's own, and sets the row aside to be
// tried again, or retires it at MaxAttempts.
func (p *processor) fail(ctx context.Context, r row, cause error) {
	o := p.outbox
	attempts := r.attempts + 1
	if attempts >= o.config.maxAttempt {
		if p.record(ctx, r, attempts, cause, true) {
			p.retired(r.id, r.dispatch.MessageID, attempts, cause)
		}
		return
	}
	if p.record(ctx, r, attempts, cause, false) {
		o.config.logger.Warn(fmt.Sprintf("Message [%d] failed to publish [%v]; attempt [%d] of [%d] counted. The rows behind it move on; it is tried again in [%s].", r.id, cause, attempts, o.config.maxAttempt, o.config.retry),
			"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "attempts", attempts, "error", cause, "retry", o.config.retry)
	}
}

func (p *processor) retired(id int64, messageID string, attempts int, cause error) {
	p.outbox.config.logger.Warn(fmt.Sprintf("Retired message [%d] after [%d] refused publish attempt(s) [%v]; it stays in durable storage until an operator releases it.", id, attempts, cause),
		"id", id, "message_id", wire.Shorten(messageID), "attempts", attempts, "error", cause)
}

// suspect is a row that failed alone in a way that does not say whose fault
// it was. Its failure is counted when a later publish succeeds (the broker was
// working: the row was at fault), and forgotten when the broker turns out to
// be unreachable.
type suspect struct {
	messageID string
	attempts  int // as stored when it failed
	cause     error
}

// maxSuspects bounds the failures waiting to be counted; past it a failure is
// not counted (the row is tried again all the same).
const maxSuspects = 1024

func (p *processor) suspect(ctx context.Context, r row, cause error) {
	o := p.outbox
	if !p.setAside(ctx, r, r.attempts, cause) {
		return
	}
	if len(p.suspects) < maxSuspects {
		p.suspects[r.id] = suspect{messageID: r.dispatch.MessageID, attempts: r.attempts, cause: cause}
	}
	o.config.logger.Warn(fmt.Sprintf("Message [%d] failed to publish alone [%v]; the rows behind it move on, and it is tried again in [%s]. The attempt counts once another message publishes.", r.id, cause, o.config.retry),
		"id", r.id, "message_id", wire.Shorten(r.dispatch.MessageID), "error", cause, "retry", o.config.retry)
}

// countSuspects counts the failures of the suspects: a publish has just
// succeeded, so the broker was working when they failed.
func (p *processor) countSuspects(ctx context.Context) {
	if len(p.suspects) == 0 {
		return
	}
	o := p.outbox
	suspects := p.suspects
	p.suspects = map[int64]suspect{}
	for id, s := range suspects {
		attempts := s.attempts + 1
		var retired time.Time
		if attempts >= o.config.maxAttempt {
			retired = o.config.clock.Now()
		}
		counted, err := o.store.countFailure(ctx, id, s.attempts, retired)
		if err != nil {
			if ctx.Err() == nil {
				o.config.logger.Warn(fmt.Sprintf("Unable to record the failed publish of message [%d] in durable storage [%v].", id, err), "id", id, "error", err)
			}
			continue
		}
		if counted && !retired.IsZero() {
			o.config.monitor.MessageRetired(1)
			p.retired(id, s.messageID, attempts, s.cause)
		}
	}
}

// setAside records a failed publish of r without retiring it: the row leaves
// this processor's hands and the sweep takes it again after RetryTimeout.
func (p *processor) setAside(ctx context.Context, r row, attempts int, cause error) bool {
	return p.record(ctx, r, attempts, cause, false)
}

// record stores a row's failed publish: its attempts and last error, and
// either its retirement or when it may be tried again. The row leaves this
// processor's hands either way. When the statement fails, the row keeps its
// lease and is published again when the lease expires.
func (p *processor) record(ctx context.Context, r row, attempts int, cause error, retire bool) bool {
	o := p.outbox
	now := o.config.clock.Now()
	var retired, retryAt time.Time
	if retire {
		retired = now
	} else {
		retryAt = now.Add(o.config.retry)
		p.setAsideRows = true
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

func flatten(groups [][]row) []row {
	var rows []row
	for _, g := range groups {
		rows = append(rows, g...)
	}
	return rows
}

// leased reports whether every row was handed over by its own commit with at
// least three quarters of its lease still ahead (by this instance's clock, which
// set it). No other instance takes a row before its lease expires, so renewing
// such rows would cost a statement (and a commit) per batch and tell nothing:
// they are published without it. Rows read back from storage (startup
// recovery, the sweep) and rows that waited long are renewed first, which also
// drops those another instance took meanwhile.
func (p *processor) leased(rows []row, now time.Time) bool {
	margin := p.outbox.config.lease * 3 / 4
	for _, r := range rows {
		if r.leaseUntil.IsZero() || r.leaseUntil.Sub(now) < margin {
			return false
		}
	}
	return true
}

// settle marks confirmed rows dispatched, retrying the update until it lands
// or the context ends (then the rows are published again later: at least once).
func (p *processor) settle(ctx context.Context, confirmed []row) {
	if len(confirmed) == 0 {
		return
	}
	o := p.outbox
	defer o.forget(confirmed)
	for first := true; ; first = false {
		now := o.config.clock.Now()
		affected, err := p.mark(ctx, confirmed, now, first)
		if err == nil {
			if affected < int64(len(confirmed)) {
				o.config.logger.Warn(fmt.Sprintf("Confirmed [%d] of [%d] published message(s) in durable storage. The others were already marked dispatched by another instance, so they were published more than once.", affected, len(confirmed)),
					"marked", affected, "published", len(confirmed))
			}
			o.config.monitor.MessageConfirmed(int(affected))
			for _, r := range confirmed {
				o.config.monitor.DispatchLag(now.Sub(r.created))
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		o.config.logger.Warn(fmt.Sprintf("Unable to mark [%d] confirmed message(s) dispatched in durable storage [%v]; retrying in [%s].", len(confirmed), err, o.config.retry),
			"count", len(confirmed), "error", err, "retry", o.config.retry)
		if !p.wait(ctx) {
			return
		}
	}
}

// markTimeout bounds the first attempt to mark confirmed rows, which runs even
// when Close has just been called: the broker has the messages, and marking
// them now saves publishing them again at the next start.
const markTimeout = 5 * time.Second

func (p *processor) mark(ctx context.Context, confirmed []row, now time.Time, first bool) (int64, error) {
	if first {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
	}
	return p.outbox.store.markDispatched(ctx, rowIDs(confirmed), now)
}

// keep returns the rows of pending whose ids are in kept, forgetting the others.
func (p *processor) keep(pending []row, kept []int64) []row {
	if len(kept) == len(pending) {
		return pending
	}
	mine := make(map[int64]bool, len(kept))
	for _, id := range kept {
		mine[id] = true
	}
	var out, lost []row
	for _, r := range pending {
		if mine[r.id] {
			out = append(out, r)
		} else {
			lost = append(lost, r)
		}
	}
	p.outbox.forget(lost)
	return out
}

// retryAfter logs a publish failure and waits RetryTimeout; false means the
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
	case <-p.outbox.config.clock.After(p.outbox.config.retry):
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

// releaseLeases lets go of the rows this instance leased and did not publish,
// within a short bound of its own (the process context has ended by now).
func (p *processor) releaseLeases() {
	o := p.outbox
	if o.config.err != nil || o.config.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	n, err := o.store.release(ctx, o.config.owner)
	if err != nil {
		o.config.logger.Warn(fmt.Sprintf("Unable to release the leases of undispatched messages at shutdown [%v]; another instance takes them when the leases expire.", err), "error", err)
		return
	}
	if n > 0 {
		o.config.logger.Info(fmt.Sprintf("Released the leases of [%d] undispatched message(s) at shutdown; they are published at the next start or by another instance.", n), "count", n)
	}
}

// releaseTimeout bounds the lease release at shutdown.
const releaseTimeout = 5 * time.Second

// Close stops the processor: it cancels the process context, so Listen and
// the startup read stop and later commits leave their rows in storage for the
// next start, waits up to ShutdownTimeout for Listen to return, and releases
// this instance's leases on the rows it did not publish.
func (p *processor) Close() error {
	o := p.outbox
	p.closeOnce.Do(func() {
		o.mu.Lock()
		o.stopping = true
		o.mu.Unlock()
		o.cancel()
	})
	neverStarted := p.started.CompareAndSwap(false, true)
	if neverStarted {
		close(p.done)
	}
	deadline := time.NewTimer(o.config.shutdown)
	defer deadline.Stop()
	select {
	case <-p.done:
	case <-deadline.C:
		return fmt.Errorf("sqlmq: the dispatch processor did not stop within [%s]; it stops when the transport's current publish returns", o.config.shutdown)
	}
	p.releaseLeases()
	err := o.store.close()
	if o.config.ownsDB && o.config.db != nil {
		return errors.Join(err, o.config.db.Close())
	}
	return err
}
