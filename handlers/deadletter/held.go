package deadletter

import (
	"sync"
	"time"
)

// SameFailureHold bounds how long the "every message of the batch failed alone
// the same way" rule may hold the same messages as an outage. Past it, those
// messages are taken to be failing on their own (two identical poison messages
// that keep landing in one batch would otherwise be redelivered for ever) and
// are set aside like any other. A failure marked messaging.Outage (a database
// or broker that is down) is not bounded by it: it never spends a message's
// budget.
const SameFailureHold = 5 * time.Minute

// heldLimit bounds the memory of held message ids.
const heldLimit = 4096

// heldMemory remembers when the same-way rule first held each message, so the
// rule cannot hold one message for ever. It is per process: a restart starts
// the clock again, which only lengthens the hold by one bound.
type heldMemory struct {
	mu    sync.Mutex
	first map[string]time.Time
	now   func() time.Time
}

func newHeldMemory() *heldMemory {
	return &heldMemory{first: map[string]time.Time{}, now: time.Now}
}

// overdue records ids as held now (those not already held) and reports
// whether any of them has been held for longer than SameFailureHold.
func (m *heldMemory) overdue(ids []string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if len(m.first)+len(ids) > heldLimit {
		for id, since := range m.first {
			if now.Sub(since) > 2*SameFailureHold {
				delete(m.first, id)
			}
		}
	}
	over := false
	for _, id := range ids {
		since, ok := m.first[id]
		if !ok {
			if len(m.first) < heldLimit {
				m.first[id] = now
			}
			continue
		}
		if now.Sub(since) > SameFailureHold {
			over = true
		}
	}
	return over
}

// forget drops ids once they are settled.
func (m *heldMemory) forget(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.first, id)
	}
}
