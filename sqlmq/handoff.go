package sqlmq

import "fmt"

// handoff passes one committed transaction's rows to the processor's channel
// without ever waiting: the rows are durable already, so a caller gains
// nothing by waiting for a processor that may itself be waiting on the broker.
//
// When the channel has no room, the rows it could not take stay in the table
// (leased to this instance), handoffs are suspended so that later commits do
// not overtake them, and the processor is woken: once it has emptied its
// channel it publishes those rows from the table in id order, and resumes
// handoffs when it finds none left. Memory stays bounded by the channel, and
// Commit never blocks.
func (o *outbox) handoff(rows []row) {
	if len(rows) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rows {
		delete(o.inflight, r.id) // from here a read of the table may take it
	}
	if o.stopping {
		return // stored; the next start (or another instance) publishes them
	}
	sent := 0
	if !o.suspended {
		for _, r := range rows {
			o.expected[r.id] = struct{}{}
			select {
			case o.channel <- r:
				sent++
				continue
			default:
				delete(o.expected, r.id)
			}
			break
		}
		if sent == len(rows) {
			return
		}
		o.suspended = true
		o.config.logger.Warn(fmt.Sprintf("The dispatch processor's channel is full [%d]; committed message(s) stay in durable storage and the processor publishes them from there.", cap(o.channel)),
			"capacity", cap(o.channel), "left", len(rows)-sent)
	}
	o.missed = true
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// isSuspended reports whether handoffs leave their rows in the table.
func (o *outbox) isSuspended() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.suspended
}

// beginCatchUp clears the missed mark before a read of the table.
func (o *outbox) beginCatchUp() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.missed = false
}

// resume ends the suspension unless a handoff left rows in the table since
// beginCatchUp; it reports whether it did.
func (o *outbox) resume() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.missed {
		return false
	}
	o.suspended = false
	return true
}
