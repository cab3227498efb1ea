package claimcheck

import (
	"sync"

	"github.com/warrenmq/messaging"
)

// MemoryStore keeps payloads in this process's memory, for tests: a consumer
// in another process finds nothing, which is the pattern failing rather than
// working. It copies bytes on the way in and out, so neither side can change
// what the other holds. It is safe for concurrent use.
type MemoryStore struct {
	mu       sync.Mutex
	payloads map[string][]byte
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{payloads: map[string][]byte{}}
}

// Put keeps a copy of content under a new UUID.
func (s *MemoryStore) Put(content []byte) (string, error) {
	key := messaging.NewID()
	kept := append([]byte(nil), content...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.payloads[key] = kept
	return key, nil
}

// Get returns a copy of the content kept under key.
func (s *MemoryStore) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	content, found := s.payloads[key]
	if !found {
		return nil, false, nil
	}
	return append([]byte{}, content...), true, nil
}

// Delete forgets key; a key it does not hold is not an error.
func (s *MemoryStore) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.payloads, key)
	return nil
}

// Len returns how many payloads the store holds.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.payloads)
}
