package avro

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"syscall"

	"github.com/warrenmq/messaging/patterns/schema"
)

// fakeRegistry is a memory registry that counts its calls, and fails them
// with down while it is set, or blocks until the caller gives up.
type fakeRegistry struct {
	*schema.MemoryRegistry
	mu                       sync.Mutex
	registers, byIDs, prints int
	down                     error
	hang                     bool
}

// errRegistryDown is what a database driver returns when its server is down.
var errRegistryDown = fmt.Errorf("dial tcp 127.0.0.1:3306: %w", syscall.ECONNREFUSED)

func newFakeRegistry() *fakeRegistry {
	return &fakeRegistry{MemoryRegistry: schema.NewMemoryRegistry()}
}

// call counts one call and says how it fails, if it does.
func (r *fakeRegistry) call(ctx context.Context, counter *int) error {
	r.mu.Lock()
	*counter++
	down, hang := r.down, r.hang
	r.mu.Unlock()
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return down
}

func (r *fakeRegistry) setDown(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = err
}

func (r *fakeRegistry) counts() (registers, byIDs, prints int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.registers, r.byIDs, r.prints
}

func (r *fakeRegistry) Register(ctx context.Context, subject, format, definition string) (schema.Schema, error) {
	if err := r.call(ctx, &r.registers); err != nil {
		return schema.Schema{}, err
	}
	return r.MemoryRegistry.Register(ctx, subject, format, definition)
}

func (r *fakeRegistry) ByID(ctx context.Context, id int64) (schema.Schema, error) {
	if err := r.call(ctx, &r.byIDs); err != nil {
		return schema.Schema{}, err
	}
	return r.MemoryRegistry.ByID(ctx, id)
}

func (r *fakeRegistry) ByFingerprint(ctx context.Context, subject, fingerprint string) (schema.Schema, error) {
	if err := r.call(ctx, &r.prints); err != nil {
		return schema.Schema{}, err
	}
	return r.MemoryRegistry.ByFingerprint(ctx, subject, fingerprint)
}

// idRegistry answers every registration with one id, whatever it is.
type idRegistry struct {
	schema.Registry
	id int64
}

func (r idRegistry) Register(_ context.Context, subject, format, definition string) (schema.Schema, error) {
	return schema.Schema{ID: r.id, Subject: subject, Format: format, Definition: definition, Version: 1}, nil
}

// The orders of the evolution tests: version 1, and version 2 which adds
// currency (with a default) and note (without one, so a reader of version 2
// cannot read version 1 unless note has a default: it has one too).
type orderV1 struct {
	ID    string `avro:"id"`
	Total int64  `avro:"total"`
}

type orderV2 struct {
	ID       string `avro:"id"`
	Total    int64  `avro:"total"`
	Currency string `avro:"currency"`
	Note     string `avro:"note"`
}

const (
	schemaV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"total","type":"long"}]}`
	schemaV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},{"name":"total","type":"long"},
		{"name":"currency","type":"string","default":"EUR"},
		{"name":"note","type":"string","default":"none"}]}`
)

var (
	typeV1 = reflect.TypeFor[orderV1]()
	typeV2 = reflect.TypeFor[orderV2]()
)
