package schema

import (
	"context"
	"sync"
	"time"
)

// MemoryRegistry keeps schemas in this process's memory. It shares nothing
// with another process, which is the whole point of a registry: use it in
// tests, and the SQL registry (or Confluent's) for anything real. It is safe
// for concurrent use.
type MemoryRegistry struct {
	monitor Monitor

	mu       sync.Mutex
	byID     map[int64]Schema
	subjects map[string][]Schema // oldest first
	lastID   int64
}

// NewMemoryRegistry returns an empty registry; Options.Monitor applies.
func NewMemoryRegistry(options ...Option) *MemoryRegistry {
	c := newConfig(options)
	return &MemoryRegistry{monitor: c.monitor, byID: map[int64]Schema{}, subjects: map[string][]Schema{}}
}

var _ Registry = (*MemoryRegistry)(nil)

// Register adds definition to subject, or returns the version with its
// fingerprint.
func (r *MemoryRegistry) Register(ctx context.Context, subject, format, definition string) (Schema, error) {
	if err := check(subject, format, definition); err != nil {
		return Schema{}, err
	}
	fingerprint := Fingerprint(definition)
	r.mu.Lock()
	for _, s := range r.subjects[subject] {
		if s.Fingerprint == fingerprint {
			r.mu.Unlock()
			r.monitor.Registered(subject, s.Version, false)
			return s, nil
		}
	}
	r.lastID++
	s := Schema{
		ID: r.lastID, Subject: subject, Version: len(r.subjects[subject]) + 1, Format: format,
		Definition: definition, Fingerprint: fingerprint, RegisteredAt: time.Now().UTC(),
	}
	r.byID[s.ID] = s
	r.subjects[subject] = append(r.subjects[subject], s)
	r.mu.Unlock()
	r.monitor.Registered(subject, s.Version, true)
	return s, nil
}

// ByID returns the schema with id.
func (r *MemoryRegistry) ByID(ctx context.Context, id int64) (Schema, error) {
	r.mu.Lock()
	s, ok := r.byID[id]
	r.mu.Unlock()
	if !ok {
		r.monitor.NotFound("")
		return Schema{}, notFoundID(id)
	}
	return s, nil
}

// ByVersion returns subject's version.
func (r *MemoryRegistry) ByVersion(ctx context.Context, subject string, version int) (Schema, error) {
	r.mu.Lock()
	versions := r.subjects[subject]
	r.mu.Unlock()
	if version < 1 || version > len(versions) {
		r.monitor.NotFound(subject)
		return Schema{}, notFoundVersion(subject, version)
	}
	return versions[version-1], nil
}

// ByFingerprint returns subject's version with fingerprint.
func (r *MemoryRegistry) ByFingerprint(ctx context.Context, subject, fingerprint string) (Schema, error) {
	r.mu.Lock()
	versions := r.subjects[subject]
	r.mu.Unlock()
	for _, s := range versions {
		if s.Fingerprint == fingerprint {
			return s, nil
		}
	}
	r.monitor.NotFound(subject)
	return Schema{}, notFoundFingerprint(subject, fingerprint)
}

// Latest returns subject's highest version.
func (r *MemoryRegistry) Latest(ctx context.Context, subject string) (Schema, error) {
	r.mu.Lock()
	versions := r.subjects[subject]
	r.mu.Unlock()
	if len(versions) == 0 {
		r.monitor.NotFound(subject)
		return Schema{}, notFoundSubject(subject)
	}
	return versions[len(versions)-1], nil
}

// Versions returns every version of subject, oldest first.
func (r *MemoryRegistry) Versions(ctx context.Context, subject string) ([]Schema, error) {
	r.mu.Lock()
	versions := append([]Schema(nil), r.subjects[subject]...)
	r.mu.Unlock()
	if len(versions) == 0 {
		r.monitor.NotFound(subject)
		return nil, notFoundSubject(subject)
	}
	return versions, nil
}
