package encryption

import (
	"encoding/hex"
	"testing"

	"github.com/warrenmq/messaging/serialization"
)

// The AceMQ family's test vector: key 00..1f (AES-256), key id "2026-01",
// nonce 00..0b, plaintext "hello". The expected bytes were computed with an
// AES-GCM implementation independent of Go's (the header, 0xAE 0x01 0x07
// "2026-01", as associated data); every library of the family writes them.
const (
	vectorKeyID = "2026-01"
	vectorBody  = "ae0107323032362d3031" + // 0xAE, version 1, key id length 7, "2026-01"
		"000102030405060708090a0b" + // nonce
		"2f67ba77aa" + // ciphertext of "hello"
		"632797b83b1f88ef1394bb9ff6e85641" // tag
)

func vectorRing(t *testing.T) *KeyRing {
	t.Helper()
	ring, err := NewKeyRing(Key{ID: vectorKeyID, Secret: secret(32, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return ring
}

func TestSealingTheTestVectorGivesTheFamilysExactBytes(t *testing.T) {
	ring := vectorRing(t)
	body := seal(ring.keys[vectorKeyID], secret(nonceSize, 0), []byte("hello"))
	if got := hex.EncodeToString(body); got != vectorBody {
		t.Fatalf("the test vector encrypts to\n%s\nwhere the family writes\n%s", got, vectorBody)
	}
}

func TestTheTestVectorDecryptsToHello(t *testing.T) {
	codec, err := New(rawCodec{}, vectorRing(t))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := hex.DecodeString(vectorBody)
	var plaintext []byte
	if err := codec.Deserialize(body, &plaintext); err != nil {
		t.Fatalf("the family's test vector does not decrypt: %v", err)
	}
	if string(plaintext) != "hello" {
		t.Fatalf("the test vector decrypts to %q, want \"hello\"", plaintext)
	}
}

func TestTheTestVectorAsJSONReadsAsAString(t *testing.T) {
	ring := vectorRing(t)
	body := seal(ring.keys[vectorKeyID], secret(nonceSize, 0), []byte(`"hello"`))
	codec, _ := New(serialization.JSON{}, ring)
	var text string
	if err := codec.Deserialize(body, &text); err != nil || text != "hello" {
		t.Fatalf("read %q, %v; want \"hello\"", text, err)
	}
}
