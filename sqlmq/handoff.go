package sqlmq

import (
	"context"
	"fmt"
	"time"
)

// handoff moves one committed transaction's rows into the processor's channel,
// after every earlier transaction's rows, so the processor sees commit order.
type handoff struct {
	rows []row
	sent int
	prev <-chan struct{} // closed when the previous handoff finished
	done chan struct{}   // closed when this one finished
}

type handoffOutcome int

const (
	handedOff handoffOutcome = iota
	timedOut
	contextEnded
)

// handoff hands committed rows to the processor. It never fails: the rows are
// already durable. It waits up to HandoffTimeout, then continues in the
// background unless that would exceed DeferredHandoffCapacity, in which case it
// waits here (back-pressure) until the processor accepts the rows or the
// process context ends.
func (o *outbox) handoff(rows []row) {
	if len(rows) == 0 {
		return
	}
	o.expect(rows)
	o.mu.Lock()
	h := &handoff{rows: rows, prev: o.tail, done: make(chan struct{})}
	o.tail = h.done
	o.mu.Unlock()

	timeout := o.config.handoff
	switch h.run(o.ctx, o.channel, o.config.clock.After(timeout)) {
	case handedOff:
		return
	case contextEnded:
		o.abandon(h)
		return
	}

	remaining := len(h.rows) - h.sent
	if o.reserve(remaining) {
		o.config.logger.Warn(fmt.Sprintf("Committed [%d] message(s) to durable storage, but the dispatch processor did not accept [%d] of them within [%s]. The handoff continues in the background.", len(rows), remaining, timeout),
			"committed", len(rows), "pending", remaining, "timeout", timeout)
		go func() {
			defer o.workers.Done()
			defer o.unreserve(remaining)
			if h.run(o.ctx, o.channel, nil) == contextEnded {
				o.abandon(h)
			}
		}()
		return
	}
	if o.ctx.Err() == nil {
		o.config.logger.Warn(fmt.Sprintf("Deferred handoff capacity [%d] reached; waiting for the dispatch processor to accept [%d] message(s).", o.config.deferred, remaining),
			"capacity", o.config.deferred, "pending", remaining)
	}
	if h.run(o.ctx, o.channel, nil) == contextEnded {
		o.abandon(h)
	}
}

// run waits for the previous handoff, then sends the rows not yet sent. A nil
// timeout never fires. It closes done when it has finished (all sent, or the
// context ended), not when it timed out: the caller continues it.
func (h *handoff) run(ctx context.Context, channel chan<- row, timeout <-chan time.Time) handoffOutcome {
	if h.prev != nil {
		select {
		case <-h.prev:
			h.prev = nil
		case <-timeout:
			return timedOut
		case <-ctx.Done():
			close(h.done)
			return contextEnded
		}
	}
	for h.sent < len(h.rows) {
		select {
		case channel <- h.rows[h.sent]:
			h.sent++
		case <-timeout:
			return timedOut
		case <-ctx.Done():
			close(h.done)
			return contextEnded
		}
	}
	close(h.done)
	return handedOff
}

// abandon reports rows left in storage because the process context ended.
func (o *outbox) abandon(h *handoff) {
	left := h.rows[h.sent:]
	o.forget(left)
	o.config.logger.Info(fmt.Sprintf("Context ended during handoff; [%d] committed message(s) remain in durable storage for the next startup.", len(left)),
		"remaining", len(left))
}

// reserve takes room for n deferred messages and a worker slot, or reports that
// the deferred capacity (or shutdown) forbids it.
func (o *outbox) reserve(n int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopping || o.deferred+n > o.config.deferred {
		return false
	}
	o.deferred += n
	o.workers.Add(1)
	return true
}

func (o *outbox) unreserve(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.deferred -= n
}
