package sqlmq

import (
	"context"
	"fmt"
	"time"
)

// The leases that let several instances share one table.

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
