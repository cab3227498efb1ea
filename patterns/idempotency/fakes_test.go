package idempotency

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
)

// fakeStore answers TryClaim from a script per key (Claimed by default, with
// lease as its lease) and records every call. errs scripts errors: by key for
// TryClaim, by "confirm key", "release key" and "renew key" for the others.
type fakeStore struct {
	mu        sync.Mutex
	results   map[string]ClaimResult
	errs      map[string]error
	lease     time.Duration
	calls     []string
	confirmed []string
	released  []string
	renewed   []string
}

func newFakeStore() *fakeStore {
	return &fakeStore{results: map[string]ClaimResult{}, errs: map[string]error{}}
}

func (s *fakeStore) TryClaim(_ context.Context, key string) (Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "claim "+key)
	if err := s.errs[key]; err != nil {
		return Claim{}, err
	}
	if r, ok := s.results[key]; ok && r != Claimed {
		return Claim{Key: key, Result: r}, nil
	}
	return Claim{Key: key, Result: Claimed, Owner: "owner-" + key, Lease: s.lease}, nil
}

func (s *fakeStore) Renew(_ context.Context, c Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewed = append(s.renewed, c.Key)
	return s.errs["renew "+c.Key]
}

func (s *fakeStore) Confirm(_ context.Context, c Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "confirm "+c.Key)
	s.confirmed = append(s.confirmed, c.Key)
	return s.errs["confirm "+c.Key]
}

func (s *fakeStore) Release(_ context.Context, c Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, "release "+c.Key)
	s.released = append(s.released, c.Key)
	return s.errs["release "+c.Key]
}

func (s *fakeStore) renewals() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.renewed...)
}

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

// fakeMonitor counts the callbacks, and tells waitFor of each.
type fakeMonitor struct {
	mu      sync.Mutex
	counts  map[string]int
	changed chan struct{}
}

func (m *fakeMonitor) add(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	m.counts[name]++
	if m.changed != nil {
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
}

// waitFor waits, within bound, for the count of name to reach n, and
// reports whether it did. The monitor needs its changed channel.
func (m *fakeMonitor) waitFor(name string, n int, bound time.Duration) bool {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for m.count(name) < n {
		select {
		case <-m.changed:
		case <-deadline.C:
			return m.count(name) >= n
		}
	}
	return true
}

func (m *fakeMonitor) Claimed(string)    { m.add("claimed") }
func (m *fakeMonitor) Duplicate(string)  { m.add("duplicate") }
func (m *fakeMonitor) InProgress(string) { m.add("in_progress") }
func (m *fakeMonitor) Released(string)   { m.add("released") }
func (m *fakeMonitor) ClaimLost(string)  { m.add("claim_lost") }
func (m *fakeMonitor) StoreFailed(_, operation string, _ error) {
	m.add("store_failed " + operation)
}
func (m *fakeMonitor) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}
