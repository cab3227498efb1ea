package encryption

import (
	"errors"
	"fmt"
	"sync"
)

// rawCodec passes bytes through unchanged, so a test sees exactly what was
// encrypted.
type rawCodec struct{}

func (rawCodec) ContentType() string { return "application/octet-stream" }

func (rawCodec) Serialize(message any) ([]byte, error) {
	raw, ok := message.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec writes []byte, not %T", message)
	}
	return raw, nil
}

func (rawCodec) Deserialize(payload []byte, target any) error {
	raw, ok := target.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec reads into *[]byte, not %T", target)
	}
	*raw = append([]byte(nil), payload...)
	return nil
}

// failingCodec fails every call with err.
type failingCodec struct{ err error }

func (failingCodec) ContentType() string                       { return "application/x-failing" }
func (c failingCodec) Serialize(any) ([]byte, error)           { return nil, c.err }
func (c failingCodec) Deserialize(payload []byte, _ any) error { return c.err }

var errInner = errors.New("the inner codec failed")

// fakeMonitor records every callback.
type fakeMonitor struct {
	mu        sync.Mutex
	encrypted []string
	decrypted []string
	refused   []error
}

func (m *fakeMonitor) Encrypted(keyID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.encrypted = append(m.encrypted, keyID)
}

func (m *fakeMonitor) Decrypted(keyID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.decrypted = append(m.decrypted, keyID)
}

func (m *fakeMonitor) Refused(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused = append(m.refused, err)
}

// secret returns a key of size bytes, each byte seed+i.
func secret(size int, seed byte) []byte {
	key := make([]byte, size)
	for i := range key {
		key[i] = seed + byte(i)
	}
	return key
}
