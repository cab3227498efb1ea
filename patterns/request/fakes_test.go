package request

import (
	"context"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// fakeMonitor counts each callback by outcome (RequestCompleted), or by
// name ("dropped", "replied", "unanswerable").
type fakeMonitor struct {
	mu     sync.Mutex
	counts map[string]int
	// refused receives a value for every ReplyRefused, when it has room.
	refused chan struct{}
}

func newFakeMonitor() *fakeMonitor {
	return &fakeMonitor{counts: map[string]int{}, refused: make(chan struct{}, 16)}
}

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
func (m *fakeMonitor) ReplyRefused(string) {
	m.add("refused")
	select {
	case m.refused <- struct{}{}:
	default:
	}
}
func (m *fakeMonitor) Unanswerable(string) { m.add("unanswerable") }

// fakeWriter records what is written and fails while err is set.
type fakeWriter struct {
	mu      sync.Mutex
	written []messaging.Dispatch
	err     error
	// during runs inside Write, to see what the handler counted meanwhile.
	during func()
}

func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.during != nil {
		w.during()
	}
	if w.err != nil {
		return 0, w.err
	}
	w.written = append(w.written, dispatches...)
	return len(dispatches), nil
}

func (w *fakeWriter) Close() error { return nil }

// fakeSettler records each settlement by message id.
type fakeSettler struct {
	mu        sync.Mutex
	decisions map[string]messaging.Decision
	order     []string
}

func newFakeSettler() *fakeSettler { return &fakeSettler{decisions: map[string]messaging.Decision{}} }

func (s *fakeSettler) Settle(_ context.Context, d messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decisions[d.MessageID] = decision
	s.order = append(s.order, decision.Verdict.String()+" "+d.MessageID)
	return nil
}

func (s *fakeSettler) Decided(d messaging.Delivery) (messaging.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, ok := s.decisions[d.MessageID]
	return decision, ok
}
