package claimcheck

import (
	"errors"
	"sync"
)

// fakeStore is a MemoryStore that fails Get a set number of times and counts
// its calls.
type fakeStore struct {
	*MemoryStore
	mu          sync.Mutex
	getFailures int
	getErr      error // returned by every Get when set
	putErr      error
	putKey      *string
	gets        int
	deletes     int
}

func newFakeStore() *fakeStore { return &fakeStore{MemoryStore: NewMemoryStore()} }

var errStoreDown = errors.New("store timed out")

func (s *fakeStore) Put(content []byte) (string, error) {
	if s.putErr != nil {
		return "", s.putErr
	}
	if s.putKey != nil {
		return *s.putKey, nil
	}
	return s.MemoryStore.Put(content)
}

func (s *fakeStore) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	s.gets++
	fail := s.getFailures > 0
	if fail {
		s.getFailures--
	}
	s.mu.Unlock()
	if fail {
		return nil, false, errStoreDown
	}
	if s.getErr != nil {
		return nil, false, s.getErr
	}
	return s.MemoryStore.Get(key)
}

func (s *fakeStore) Delete(key string) error {
	s.mu.Lock()
	s.deletes++
	s.mu.Unlock()
	return s.MemoryStore.Delete(key)
}

// fakeMonitor counts the events.
type fakeMonitor struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *fakeMonitor) add(event string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	m.counts[event]++
}

func (m *fakeMonitor) count(event string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[event]
}

func (m *fakeMonitor) Inlined(int)                           { m.add("inlined") }
func (m *fakeMonitor) Offloaded(int)                         { m.add("offloaded") }
func (m *fakeMonitor) Fetched(int)                           { m.add("fetched") }
func (m *fakeMonitor) Missing()                              { m.add("missing") }
func (m *fakeMonitor) StoreFailed(operation string, _ error) { m.add("failed_" + operation) }
