package encryption

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/warrenmq/messaging"
)

// FuzzDeserialize: whatever the bytes, decrypting never panics, and every
// refusal is fatal and says which of the four ways the body failed. Only a
// body this ring encrypted opens.
func FuzzDeserialize(f *testing.F) {
	vector, _ := hex.DecodeString(vectorBody)
	ring, _ := NewKeyRing(Key{ID: vectorKeyID, Secret: secret(32, 0)}, Key{ID: "k", Secret: secret(16, 3)})
	codec, _ := New(rawCodec{}, ring)
	valid, _ := codec.Serialize([]byte(`{"id":"o-1"}`))
	for _, seed := range [][]byte{vector, valid, vector[:20], {0xAE}, {0xAE, 0x01}, {0xAE, 0x01, 0x00}, {0xAE, 0x02, 0x01, 'k'}, []byte(`{"id":1}`), {}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var plaintext []byte
		err := codec.Deserialize(payload, &plaintext)
		if err == nil {
			return // an authentic body: the fuzzer found a seed or its own copy of one
		}
		if !messaging.IsFatal(err) {
			t.Fatalf("a refusal is not fatal: %v", err)
		}
		if !errors.Is(err, ErrNotEncrypted) && !errors.Is(err, ErrUnsupportedVersion) && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrTampered) {
			t.Fatalf("a refusal of no known kind: %v", err)
		}
	})
}
