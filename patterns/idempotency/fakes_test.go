package idempotency

import (
	"context"
	"fmt"
	"sync"

	"github.com/warrenmq/messaging"
)

// fakeStore answers TryClaim from a script per key (Claimed by default) and
// records every call.
type fakeStore struct {
	mu        sync.Mutex
	results   map[string]ClaimResult
	errs      map[string]error
	calls     []string
	confirmed []string
	released  []string
}

func newFakeStore() *fakeStore {
	return &fakeStore{results: map[string]ClaimResult{}, errs: map[string]error{}}
}

func (s *fakeStore) TryClaim(_ context.Context, key string) (ClaimResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "claim "+key)
	if err := s.errs[key]; err != nil {
		return 0, err
	}
	if r, ok := s.results[key]; ok {
		return r, nil
	}
	return Claimed, nil
}

func (s *fakeStore) Claim(ctx context.Context, key string) (bool, error) {
	r, err := s.TryClaim(ctx, key)
	return r == Claimed, err
}

func (s *fakeStore) Confirm(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "confirm "+key)
	s.confirmed = append(s.confirmed, key)
	return s.errs["confirm "+key]
}

func (s *fakeStore) Release(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "release "+key)
	s.released = append(s.released, key)
	return s.errs["release "+key]
}

// claimOnly is a custom store without TryClaim: Claim's bool only.
type claimOnly struct {
	taken map[string]bool
}

func (s *claimOnly) Claim(_ context.Context, key string) (bool, error) {
	if s.taken[key] {
		return false, nil
	}
	s.taken[key] = true
	return true, nil
}
func (s *claimOnly) Confirm(context.Context, string) error { return nil }
func (s *claimOnly) Release(context.Context, string) error { return nil }

// fakeSettler records the decision per message id; fail makes Settle fail.
type fakeSettler struct {
	mu        sync.Mutex
	decisions map[string]messaging.Decision
	order     []string
	fail      error
}

func newFakeSettler() *fakeSettler {
	return &fakeSettler{decisions: map[string]messaging.Decision{}}
}

func (s *fakeSettler) Settle(_ context.Context, d messaging.Delivery, decision messaging.Decision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
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

// fakeMonitor counts the callbacks.
type fakeMonitor struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *fakeMonitor) add(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	m.counts[name]++
}
func (m *fakeMonitor) Claimed(string)    { m.add("claimed") }
func (m *fakeMonitor) Duplicate(string)  { m.add("duplicate") }
func (m *fakeMonitor) InProgress(string) { m.add("in_progress") }
func (m *fakeMonitor) Released(string)   { m.add("released") }
func (m *fakeMonitor) StoreFailed(_, operation string, _ error) {
	m.add("store_failed " + operation)
}
func (m *fakeMonitor) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}
