package idempotency

import (
	"context"
	"sync"
	"time"
)

// DefaultMemoryTTL is how long MemoryStore remembers a key when
// NewMemoryStore is given zero or a negative duration.
const DefaultMemoryTTL = time.Hour

// MemoryStore keeps its keys in the process: for tests and for one worker.
// With two processes, each has its own memory and both believe they are
// first. It is safe for concurrent use.
type MemoryStore struct {
	ttl     time.Duration
	lease   time.Duration
	now     func() time.Time
	mu      sync.Mutex
	entries map[string]memoryEntry
}

type memoryEntry struct {
	at        time.Time // claimed or confirmed at
	confirmed bool
}

// NewMemoryStore returns a store that forgets a key ttl after it was claimed
// or confirmed (zero or negative: DefaultMemoryTTL); entries that old are swept
// on each claim. StoreOptions.ClaimTimeout and Clock apply.
func NewMemoryStore(ttl time.Duration, options ...StoreOption) *MemoryStore {
	if ttl <= 0 {
		ttl = DefaultMemoryTTL
	}
	c := newStoreConfig(options)
	return &MemoryStore{ttl: ttl, lease: c.claimTimeout, now: c.now, entries: map[string]memoryEntry{}}
}

// TryClaim claims key, or reports it a duplicate or in progress.
func (s *MemoryStore) TryClaim(_ context.Context, key string) (ClaimResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k, e := range s.entries {
		if now.Sub(e.at) >= s.ttl {
			delete(s.entries, k)
		}
	}
	e, found := s.entries[key]
	switch {
	case !found:
	case e.confirmed:
		return Duplicate, nil
	case now.Sub(e.at) < s.lease:
		return InProgress, nil
	}
	s.entries[key] = memoryEntry{at: now}
	return Claimed, nil
}

// Claim is TryClaim reduced to whether the caller now holds key.
func (s *MemoryStore) Claim(ctx context.Context, key string) (bool, error) {
	result, err := s.TryClaim(ctx, key)
	return result == Claimed, err
}

// Confirm records the work for key as done.
func (s *MemoryStore) Confirm(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[key] = memoryEntry{at: s.now(), confirmed: true}
	return nil
}

// Release forgets an unconfirmed claim on key; a confirmed key stays.
func (s *MemoryStore) Release(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, found := s.entries[key]; found && !e.confirmed {
		delete(s.entries, key)
	}
	return nil
}

// Len returns how many keys the store holds, claimed or confirmed.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
