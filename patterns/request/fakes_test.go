package request

import (
	"sync"
	"time"
)

// fakeMonitor counts each callback by outcome (RequestCompleted), or by
// name ("dropped", "replied", "unanswerable").
type fakeMonitor struct {
	mu     sync.Mutex
	counts map[string]int
}

func newFakeMonitor() *fakeMonitor { return &fakeMonitor{counts: map[string]int{}} }

func (m *fakeMonitor) add(name string) {
	m.mu.Lock()
	m.counts[name]++
	m.mu.Unlock()
}

func (m *fakeMonitor) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}

func (m *fakeMonitor) RequestCompleted(_, outcome string, _ time.Duration) { m.add(outcome) }
func (m *fakeMonitor) ReplyDropped(string)                                 { m.add("dropped") }
func (m *fakeMonitor) Answered(string)                                     { m.add("replied") }
func (m *fakeMonitor) Unanswerable(string)                                 { m.add("unanswerable") }
