package encryption_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/warrenmq/messaging/patterns/claimcheck"
	"github.com/warrenmq/messaging/serialization/encryption"
)

type scan struct {
	Patient string `json:"patient"`
	Image   string `json:"image"`
}

// Encrypt, then offload: the claim check wraps the encryption codec, so the
// store holds only ciphertext and the message carries only the key.
func TestEncryptedPayloadsAreOffloadedAsCiphertext(t *testing.T) {
	ring, err := encryption.NewKeyRing(encryption.Key{ID: "2026-01", Secret: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	encrypted, err := encryption.New(nil, ring)
	if err != nil {
		t.Fatal(err)
	}
	store := claimcheck.NewMemoryStore()
	codec, err := claimcheck.New(encrypted, store, claimcheck.Options.OffloadAbove(1024))
	if err != nil {
		t.Fatal(err)
	}
	if codec.ContentType() != encryption.ContentType {
		t.Fatalf("the claim check's content type is %q, want the encryption codec's", codec.ContentType())
	}

	large := scan{Patient: "p-2", Image: strings.Repeat("secret-pixels;", 1000)}
	body, err := codec.Serialize(large)
	if err != nil {
		t.Fatal(err)
	}
	key, claimed := claimcheck.KeyOf(body)
	if !claimed || store.Len() != 1 {
		t.Fatalf("a %d-byte message was not offloaded (claimed %v, %d in the store)", len(large.Image), claimed, store.Len())
	}
	kept, _, _ := store.Get(key)
	if kept[0] != 0xAE || bytes.Contains(kept, []byte("secret-pixels")) || bytes.Contains(kept, []byte("p-2")) {
		t.Fatalf("the store holds plaintext, not the encryption codec's framing: %q...", kept[:40])
	}
	var decoded scan
	if err := codec.Deserialize(body, &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded != large {
		t.Fatal("the offloaded message did not read back as written")
	}

	small := scan{Patient: "p-1", Image: "thumbnail"}
	body, _ = codec.Serialize(small)
	if _, claimed := claimcheck.KeyOf(body); claimed || bytes.Contains(body, []byte("thumbnail")) {
		t.Fatalf("a small message should travel inline and encrypted: %q", body)
	}
	decoded = scan{}
	if err := codec.Deserialize(body, &decoded); err != nil || decoded != small {
		t.Fatalf("the inline message read back as %+v, %v", decoded, err)
	}
}
