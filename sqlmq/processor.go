package sqlmq

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
	due   dueTimer // fires when the earliest row set aside is due
	marks *marker  // marks confirmed pages while the next is published
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
	p.recover(o.ctx)
	p.due.arm(p.nextDue(o.ctx))
	p.loop(o.ctx)
}

// loop is Listen's: it publishes what commits hand over, catches up with the
// rows they left in the table, and runs the timed sweeps, until ctx ends.
func (p *processor) loop(ctx context.Context) {
	o := p.outbox
	sweep := time.After(o.config.sweep)
	prune := time.After(o.config.pruneEvery)
	var pause <-chan time.Time // a failed read of the table is tried again
	busy := false
	for {
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
				pause = time.After(o.config.retry)
			}
		case <-p.due.c:
			p.due.fired()
			p.dropAhead()
			sweep = p.after(o.config.sweep, p.sweep(ctx))
			p.due.arm(p.nextDue(ctx))
		case <-sweep:
			p.dropAhead()
			sweep = p.after(o.config.sweep, p.sweep(ctx))
		case <-prune:
			prune = p.after(o.config.pruneEvery, p.prune(ctx))
		}
	}
}

// dueTimer fires when the earliest row set aside to be tried again is due.
type dueTimer struct {
	at time.Time
	c  <-chan time.Time
}

// arm makes the timer fire at at, unless it fires earlier already; a zero at
// changes nothing.
func (t *dueTimer) arm(at time.Time) {
	if at.IsZero() || (t.c != nil && !at.Before(t.at)) {
		return
	}
	t.at, t.c = at, time.After(time.Until(at))
}

// fired disarms the timer after it fired.
func (t *dueTimer) fired() { t.at, t.c = time.Time{}, nil }

// nextDue is when the next row set aside (by any instance) is due, zero when
// none is or the table cannot be read (the periodic sweep takes it then).
func (p *processor) nextDue(ctx context.Context) time.Time {
	due, err := p.outbox.store.nextDue(ctx)
	if err != nil {
		return time.Time{}
	}
	return due
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
	return time.After(d)
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
	deadline := time.After(o.config.linger)
	gap := min(lingerGap, o.config.linger)
	for len(rows) < o.config.pageSize {
		select {
		case r := <-o.channel:
			rows = p.drain(append(rows, r))
		case <-time.After(gap):
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
