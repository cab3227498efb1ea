package flow

import (
	"context"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
)

// fakeSettler records each decision by message id.
type fakeSettler struct {
	mu        sync.Mutex
	decisions map[string]messaging.Decision
	order     []string
}

func newFakeSettler() *fakeSettler {
	return &fakeSettler{decisions: map[string]messaging.Decision{}}
}

func (s *fakeSettler) Settle(_ context.Context, d messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decisions[d.MessageID] = decision
	s.order = append(s.order, fmt.Sprintf("%s %s", d.MessageID, decision.Verdict))
	return nil
}

func (s *fakeSettler) Decided(d messaging.Delivery) (messaging.Decision, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	decision, ok := s.decisions[d.MessageID]
	return decision, ok
}

func (s *fakeSettler) reason(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.decisions[id]; ok && d.Reason != nil {
		return d.Reason.Error()
	}
	return ""
}

// fakeWriter records what it was given and fails while fail is set.
type fakeWriter struct {
	mu      sync.Mutex
	written []messaging.Dispatch
	calls   int
	fail    error
	// failOnce fails the first write of a dispatch it returns an error for;
	// the others of that write land.
	failOnce func(messaging.Dispatch) error
	failed   map[string]bool
}

func (w *fakeWriter) Write(_ context.Context, dispatches ...messaging.Dispatch) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.fail != nil {
		return 0, w.fail
	}
	// As a transport accounts for a write: each message lands or fails.
	results := make([]messaging.PublishResult, len(dispatches))
	failures := 0
	for i, d := range dispatches {
		results[i] = messaging.PublishResult{MessageID: d.MessageID, Confirmed: true, Routed: true}
		if w.failOnce != nil && !w.failed[d.MessageID] {
			if err := w.failOnce(d); err != nil {
				if w.failed == nil {
					w.failed = map[string]bool{}
				}
				w.failed[d.MessageID] = true
				results[i] = messaging.PublishResult{MessageID: d.MessageID, Err: err}
				failures++
				continue
			}
		}
		w.written = append(w.written, d)
	}
	if failures > 0 {
		return len(dispatches) - failures, &messaging.PublishError{Results: results}
	}
	return len(dispatches), nil
}

func (w *fakeWriter) Close() error { return nil }

// fakeMonitor counts the callbacks and keeps the run reports.
type fakeMonitor struct {
	mu     sync.Mutex
	counts map[string]int
	runs   []RunFinished
}

func (m *fakeMonitor) add(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	m.counts[name]++
}

func (m *fakeMonitor) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}

func (m *fakeMonitor) Forwarded(string, string)            { m.add("forwarded") }
func (m *fakeMonitor) ForwardFailed(string, string, error) { m.add("forward_failed") }
func (m *fakeMonitor) StepFailed(string, string, error)    { m.add("step_failed") }
func (m *fakeMonitor) Refused(string, string, error)       { m.add("refused") }
func (m *fakeMonitor) RunFinished(run RunFinished) {
	m.add("run_" + run.Outcome)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs = append(m.runs, run)
}
