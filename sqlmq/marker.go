package sqlmq

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// marker marks confirmed pages dispatched on a goroutine of its own, so the
// processor reads and publishes the next page while the UPDATE of the
// previous one runs. Pages handed over while an UPDATE runs are marked
// together by the next one, up to PageSize rows (the size every other
// statement of the outbox keeps to), so under a stream of small commits the
// relay's marks do not add a database commit per published batch. At most
// markQueue pages wait: past that, handing over a page waits, so memory and
// the rows on their way stay bounded. A page's rows stay on their way
// (expected) until their mark has landed, so no read of the table publishes
// them again meanwhile.
type marker struct {
	p       *processor
	pages   chan markJob
	pending sync.WaitGroup // pages handed over and not yet marked
	stopped chan struct{}
	hurry   chan struct{} // flush wants what waits marked now

	mu sync.Mutex
	// deadline, set by stop, ends the marking of what is still waiting: past
	// it a page is left unmarked (published again at the next start), so
	// several pages waiting on a database that does not answer cannot hold
	// Close for a markTimeout each.
	deadline time.Time
}

// markQueue is how many confirmed pages may wait for their mark.
const markQueue = 8

// markEvery is the least time from the start of one UPDATE to the start of
// the next while it has less than a page to mark: under a stream of
// one-message commits the relay then commits at most 50 marks a second
// instead of one per published batch (hundreds), leaving the database to the
// service's own commits. Publishing is not delayed; only the mark is, so a
// crash may publish up to this much more again (at least once, as always).
// A flush (a catch-up pass from the first row) and stop do not wait for it.
const markEvery = 20 * time.Millisecond

type markJob struct {
	ctx  context.Context
	rows []row
}

// startMarker starts the marking goroutine; stop ends it.
func startMarker(p *processor) *marker {
	m := &marker{p: p, pages: make(chan markJob, markQueue), stopped: make(chan struct{}), hurry: make(chan struct{}, 1)}
	go m.run()
	return m
}

func (m *marker) run() {
	defer close(m.stopped)
	limit := m.p.outbox.config.pageSize
	var carried *markJob
	var last time.Time // when the last UPDATE started
	for {
		job, ok := markJob{}, true
		if carried != nil {
			job, carried = *carried, nil
		} else if job, ok = <-m.pages; !ok {
			return
		}
		rows, jobs := job.rows, 1
		// Gather what waits; while less than a page and markEvery has not
		// passed since the last UPDATE, also what comes meanwhile.
		due := time.NewTimer(time.Until(last.Add(markEvery)))
	gather:
		for len(rows) < limit {
			var next markJob
			var open bool
			select {
			case next, open = <-m.pages: // what already waits goes first
			default:
				select {
				case next, open = <-m.pages:
				case <-due.C:
					break gather
				case <-m.hurry:
					break gather
				}
			}
			if !open {
				break gather
			}
			if len(rows)+len(next.rows) > limit {
				carried = &next
				break gather
			}
			rows = slices.Concat(rows, next.rows)
			jobs++
		}
		due.Stop()
		last = time.Now()
		if m.pastDeadline() {
			m.p.outbox.forget(rows)
		} else {
			m.p.settle(job.ctx, rows)
		}
		for range jobs {
			m.pending.Done()
		}
	}
}

// mark hands confirmed rows over to be marked dispatched. It waits only
// while markQueue pages are already waiting.
func (m *marker) mark(ctx context.Context, rows []row) {
	if len(rows) == 0 {
		return
	}
	m.pending.Add(1)
	m.pages <- markJob{ctx: ctx, rows: rows}
}

// flush waits until every page handed over has been marked (or given up on
// because the context ended: then its rows are published again later).
func (m *marker) flush() {
	select {
	case m.hurry <- struct{}{}:
	default:
	}
	m.pending.Wait()
}

// stop marks what was handed over and ends the goroutine. The marks run
// even after the context ended, for markTimeout in all (each attempt bounded
// by it too): the broker has those messages, and marking them now saves
// publishing them again at the next start.
func (m *marker) stop() {
	m.mu.Lock()
	m.deadline = time.Now().Add(markTimeout)
	m.mu.Unlock()
	close(m.pages)
	<-m.stopped
}

func (m *marker) pastDeadline() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.deadline.IsZero() && time.Now().After(m.deadline)
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
		now := time.Now()
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
