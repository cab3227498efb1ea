package idempotency

import (
	"context"
	"sync"
	"time"

	"github.com/warrenmq/messaging"
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
	mu      sync.Mutex
	entries map[string]memoryEntry
}

type memoryEntry struct {
	at        time.Time // claimed, renewed or confirmed at
	confirmed bool
	owner     string
}

// NewMemoryStore returns a store that forgets a key ttl after it was claimed,
// renewed or confirmed (zero or negative: DefaultMemoryTTL); entries that old
// are swept on each claim. StoreOptions.ClaimTimeout applies.
func NewMemoryStore(ttl time.Duration, options ...StoreOption) *MemoryStore {
	if ttl <= 0 {
		ttl = DefaultMemoryTTL
	}
	c := newStoreConfig(options)
	return &MemoryStore{ttl: ttl, lease: c.claimTimeout, entries: map[string]memoryEntry{}}
}

// TryClaim claims key, or reports it a duplicate or in progress.
func (s *MemoryStore) TryClaim(_ context.Context, key string) (Claim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for k, e := range s.entries {
		if now.Sub(e.at) >= s.ttl {
			delete(s.entries, k)
		}
	}
	e, found := s.entries[key]
	switch {
	case !found:
	case e.confirmed:
		return Claim{Key: key, Result: Duplicate}, nil
	case now.Sub(e.at) < s.lease:
		return Claim{Key: key, Result: InProgress}, nil
	}
	c := Claim{Key: key, Result: Claimed, Owner: messaging.NewID(), Lease: s.lease}
	s.entries[key] = memoryEntry{at: now, owner: c.Owner}
	return c, nil
}

// Renew restarts the lease of the caller's claim; ErrClaimLost when the key
// is no longer held by it.
func (s *MemoryStore) Renew(_ context.Context, c Claim) error {
	return s.update(c, func(e *memoryEntry) {})
}

// Confirm records the work of the caller's claim as done; ErrClaimLost when
// the key is no longer held by it.
func (s *MemoryStore) Confirm(_ context.Context, c Claim) error {
	return s.update(c, func(e *memoryEntry) { e.confirmed = true })
}

// update changes the entry of c when c still holds it, and stamps it now.
func (s *MemoryStore) update(c Claim, change func(*memoryEntry)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, found := s.entries[c.Key]
	if !found || e.confirmed || c.Owner == "" || e.owner != c.Owner {
		return ErrClaimLost
	}
	change(&e)
	e.at = time.Now()
	s.entries[c.Key] = e
	return nil
}

// Release forgets the caller's unconfirmed claim; a confirmed key, or one
// another delivery holds, stays.
func (s *MemoryStore) Release(_ context.Context, c Claim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, found := s.entries[c.Key]; found && !e.confirmed && c.Owner != "" && e.owner == c.Owner {
		delete(s.entries, c.Key)
	}
	return nil
}

// Len returns how many keys the store holds, claimed or confirmed.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
