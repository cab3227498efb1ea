package encryption

import (
	"testing"

	"github.com/warrenmq/messaging/serialization/internal/codectest"
)

// BenchmarkJSON is the inner codec alone, on the order every codec's
// benchmark uses.
func BenchmarkJSON(b *testing.B) { codectest.BenchmarkJSON(b) }

// BenchmarkEncryptedJSON is the same order encrypted with AES-256-GCM.
func BenchmarkEncryptedJSON(b *testing.B) {
	ring, _ := NewKeyRing(Key{ID: "2026-01", Secret: secret(32, 0)})
	codec, _ := New(nil, ring)
	codectest.RoundTrip(b, codec, codectest.SampleOrder(), codectest.NewOrder)
}
