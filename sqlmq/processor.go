package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/warrenmq/messaging"
)

// processor is the dispatch processor: it publishes committed rows through the
// transport and marks them dispatched once the broker confirmed them.
type processor struct {
	outbox    *outbox
	started   atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	publisher publisher
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
	ctx := o.ctx

	p.recover(ctx)
	sweep := o.config.clock.After(o.config.sweep)
	prune := o.config.clock.After(o.config.pruneEvery)
	busy := false
	for {
		select {
		case <-ctx.Done():
			return
		case first := <-o.channel:
			rows := p.gather(ctx, first, busy)
			left := len(o.channel)
			p.dispatch(ctx, rows)
			// Rows that arrived while this batch was published are waiting
			// now: more are likely on their way, so the next batch lingers.
			busy = len(o.channel) > left
		case <-sweep:
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

// sweep claims a page of rows no live instance holds and publishes it. It
// reports whether the page was full (so there may be more).
func (p *processor) sweep(ctx context.Context) bool {
	o := p.outbox
	rows, unreadable, err := o.store.claim(ctx, o.config.owner, o.config.clock.Now(), o.config.lease, o.config.pageSize)
	if err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to read undispatched message(s) from durable storage [%v]; the sweep tries again in [%s].", err, o.config.sweep),
				"error", err, "retry", o.config.sweep)
		}
		return false
	}
	for _, u := range unreadable {
		o.config.logger.Warn(fmt.Sprintf("Retired message [%d]: it cannot be read back from durable storage [%v]; it stays there until an operator fixes and releases it.", u.id, u.err),
			"id", u.id, "error", u.err)
	}
	if len(unreadable) > 0 {
		o.config.monitor.MessageRetired(len(unreadable))
	}
	full := len(rows)+len(unreadable) == o.config.pageSize
	claimed := rows[:0:0]
	for _, r := range rows {
		if !o.isExpected(r.id) { // already on its way through the channel
			claimed = append(claimed, r)
		}
	}
	p.dispatch(ctx, claimed)
	return full
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

// dispatch publishes rows in order until each is confirmed, retired, taken by
// another instance, or the context ends. After an error it waits RetryTimeout
// and publishes the rows still owed, in the same order.
func (p *processor) dispatch(ctx context.Context, rows []row) {
	o := p.outbox
	pending := rows
	probe := false
	for len(pending) > 0 {
		if ctx.Err() != nil {
			o.forget(pending)
			return
		}
		now := o.config.clock.Now()
		if !p.leased(pending, now) {
			kept, err := o.store.renew(ctx, o.config.owner, rowIDs(pending), now.Add(o.config.lease))
			if err != nil {
				if !p.retryAfter(ctx, len(pending), err) {
					o.forget(pending)
					return
				}
				continue
			}
			pending = p.keep(pending, kept)
			if len(pending) == 0 {
				return
			}
		}

		attempt := pending
		if probe {
			attempt = pending[:1]
		}
		dispatches := make([]messaging.Dispatch, len(attempt))
		for i, r := range attempt {
			dispatches[i] = clone(r.dispatch)
		}
		o.config.monitor.MessagePublished(len(attempt))
		_, err := p.publisher.Write(ctx, dispatches...)
		outcome := classify(attempt, err)

		confirmed := make([]row, 0, len(attempt))
		settled := map[int64]bool{}
		retired := false
		for i, r := range attempt {
			switch {
			case outcome[i] == nil:
				confirmed = append(confirmed, r)
				settled[r.id] = true
			case outcome[i] != errTransient:
				if p.refused(ctx, &attempt[i], outcome[i]) {
					settled[r.id] = true
					retired = true
				}
			}
		}
		p.settle(ctx, confirmed)
		// attempt shares its rows with pending, so refusal counts carry over.
		next := pending[:0:0]
		for _, r := range pending {
			if !settled[r.id] {
				next = append(next, r)
			}
		}
		owed := len(settled) < len(attempt)
		pending = next
		if err == nil || !owed {
			probe = false
			continue
		}
		// With no progress, the next attempt publishes the first row alone, so a
		// row that breaks the whole batch (a missing exchange closes the
		// channel) is found and counted against.
		probe = len(confirmed) == 0 && !retired
		if !p.retryAfter(ctx, len(pending), err) {
			o.forget(pending)
			return
		}
	}
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

// errTransient marks a message whose failure says nothing about the message
// itself (connection lost, broker blocked): it is retried, never counted.
var errTransient = errors.New("transient")

// classify returns, per row of attempt, nil (confirmed), errTransient, or the
// broker's reason for refusing that row.
func classify(attempt []row, err error) []error {
	outcome := make([]error, len(attempt))
	if err == nil {
		return outcome
	}
	for i := range outcome {
		outcome[i] = errTransient
	}
	var publishErr *messaging.PublishError
	if errors.As(err, &publishErr) {
		// Results come in publish order, one per row, from our transports: match
		// by position. Otherwise match by id, each result used once, so two rows
		// sharing a message id can never settle on one confirm.
		byPosition := len(publishErr.Results) == len(attempt)
		byID := map[string][]messaging.PublishResult{}
		if !byPosition {
			for _, result := range publishErr.Results {
				byID[result.MessageID] = append(byID[result.MessageID], result)
			}
		}
		for i, r := range attempt {
			var result messaging.PublishResult
			if byPosition {
				result = publishErr.Results[i]
				if result.MessageID != "" && result.MessageID != r.dispatch.MessageID {
					continue // not the account of this row: retry it
				}
			} else {
				queued := byID[r.dispatch.MessageID]
				if len(queued) == 0 {
					continue
				}
				result, byID[r.dispatch.MessageID] = queued[0], queued[1:]
			}
			switch {
			case result.Err == nil && result.Confirmed && result.Routed:
				outcome[i] = nil
			case result.Err == nil && result.Confirmed:
				outcome[i] = messaging.ErrUnroutable
			case errors.Is(result.Err, messaging.ErrUnroutable):
				outcome[i] = result.Err
				// A nack (ErrRefused) stays transient: it says the broker could not
				// take the message now (a full queue with reject-publish, an
				// internal error), not that it never will, so it must not retire
				// rows within a minute of a passing condition.
			case len(attempt) == 1 && missingExchange(result.Err):
				outcome[i] = result.Err
			}
		}
		return outcome
	}
	if len(attempt) == 1 && (missingExchange(err) || errors.Is(err, messaging.ErrUnroutable)) {
		outcome[0] = err
	}
	return outcome
}

// missingExchange reports the broker's 404 NOT_FOUND: the exchange does not exist.
func missingExchange(err error) bool {
	if err == nil {
		return false
	}
	var amqpErr *amqp.Error
	if errors.As(err, &amqpErr) && amqpErr.Code == amqp.NotFound {
		return true
	}
	return strings.Contains(err.Error(), "NOT_FOUND")
}

// refused counts a refusal against a row and retires the row at MaxAttempts;
// it reports whether the row was retired.
func (p *processor) refused(ctx context.Context, r *row, cause error) bool {
	o := p.outbox
	r.attempts++
	var retired time.Time
	if r.attempts >= o.config.maxAttempt {
		retired = o.config.clock.Now()
	}
	if err := o.store.recordFailure(ctx, r.id, r.attempts, cause.Error(), retired); err != nil {
		if ctx.Err() == nil {
			o.config.logger.Warn(fmt.Sprintf("Unable to record the failed publish of message [%d] in durable storage [%v].", r.id, err), "id", r.id, "error", err)
		}
		return false // not retired in storage: keep trying it
	}
	if retired.IsZero() {
		return false
	}
	o.forget([]row{*r})
	o.config.monitor.MessageRetired(1)
	o.config.logger.Warn(fmt.Sprintf("Retired message [%d] after [%d] refused publish attempt(s) [%v]; it stays in durable storage until an operator releases it.", r.id, r.attempts, cause),
		"id", r.id, "message_id", r.dispatch.MessageID, "attempts", r.attempts, "error", cause)
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

// Close stops the processor: it cancels the process context, so Listen, the
// startup read and every handoff stop (handoffs leave their rows in storage for
// the next start), and waits up to ShutdownTimeout for Listen to return.
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
	workers := make(chan struct{})
	go func() { o.workers.Wait(); close(workers) }()
	select {
	case <-workers:
	case <-deadline.C:
		return fmt.Errorf("sqlmq: background handoffs did not stop within [%s]", o.config.shutdown)
	}
	p.releaseLeases()
	err := o.store.close()
	if o.config.ownsDB && o.config.db != nil {
		return errors.Join(err, o.config.db.Close())
	}
	return err
}
