package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxKeyID is the longest key id, in bytes: its length travels in one byte.
const MaxKeyID = 255

// Key is one AES key and the id it is known by. The id travels in clear in
// every message encrypted with the key, so make it a name (a date, a version),
// never something derived from the secret.
type Key struct {
	// ID names the key, 1 to MaxKeyID bytes of UTF-8, e.g. "2026-01".
	ID string
	// Secret is the AES key: 16, 24 or 32 bytes (AES-128, AES-192 or
	// AES-256). NewKeyRing copies it.
	Secret []byte
}

// KeyRing holds the keys a codec may use, by id: it writes with its current
// key and reads with any key it holds. It is immutable and safe for
// concurrent use.
//
// Keys rotate without a flag day, in three deployments:
//
//  1. Every service that reads gets the new key beside the current one:
//     NewKeyRing(old, fresh). Nothing is written with fresh yet.
//  2. Every service that writes makes it current: NewKeyRing(fresh, old).
//     Readers that hold both read messages of either key.
//  3. Once no queue, dead-letter queue, claim-check store or replay can still
//     hold a message written with old, drop it: NewKeyRing(fresh).
//
// The codec's Monitor reports the key of every decryption, which tells when
// the old key is no longer seen.
type KeyRing struct {
	current string
	keys    map[string]ringKey
}

// ringKey is a key ready to use: its cipher and the header of the messages
// it encrypts.
type ringKey struct {
	aead   cipher.AEAD
	header []byte // magic, version, key id length, key id: the associated data
}

// NewKeyRing returns a ring that writes with current and reads with current
// and every one of others. The error says which key is unusable: an empty or
// over-long id, an id that is not UTF-8, a secret of another length than 16,
// 24 or 32 bytes, or an id given twice.
func NewKeyRing(current Key, others ...Key) (*KeyRing, error) {
	r := &KeyRing{current: current.ID, keys: make(map[string]ringKey, 1+len(others))}
	for _, key := range append([]Key{current}, others...) {
		if _, taken := r.keys[key.ID]; taken {
			return nil, fmt.Errorf("encryption: the key id %q is given twice; give each key of a ring its own id", key.ID)
		}
		prepared, err := prepare(key)
		if err != nil {
			return nil, err
		}
		r.keys[key.ID] = prepared
	}
	return r, nil
}

// prepare checks key and builds its cipher and header.
func prepare(key Key) (ringKey, error) {
	switch {
	case key.ID == "":
		return ringKey{}, errors.New("encryption: a key needs an id, which travels in every message so that readers pick the key; name it, e.g. \"2026-01\"")
	case len(key.ID) > MaxKeyID:
		return ringKey{}, fmt.Errorf("encryption: the key id %q... is %d bytes and the framing carries at most %d; shorten it", key.ID[:32], len(key.ID), MaxKeyID)
	case !utf8.ValidString(key.ID):
		return ringKey{}, fmt.Errorf("encryption: the key id %q is not UTF-8; name keys in text", key.ID)
	}
	switch len(key.Secret) {
	case 16, 24, 32:
	default:
		return ringKey{}, fmt.Errorf("encryption: the key %q is %d bytes; AES takes 16, 24 or 32 (generate one with crypto/rand)", key.ID, len(key.Secret))
	}
	block, err := aes.NewCipher(slices.Clone(key.Secret))
	if err != nil {
		return ringKey{}, fmt.Errorf("encryption: the key %q: %w", key.ID, err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return ringKey{}, fmt.Errorf("encryption: the key %q: %w", key.ID, err)
	}
	header := append([]byte{magic, version, byte(len(key.ID))}, key.ID...)
	return ringKey{aead: aead, header: header}, nil
}

// Current returns the id of the key the ring writes with.
func (r *KeyRing) Current() string { return r.current }

// IDs returns the ids of every key the ring reads with, sorted.
func (r *KeyRing) IDs() []string {
	ids := make([]string, 0, len(r.keys))
	for id := range r.keys {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// held names the ring's keys for an error text.
func (r *KeyRing) held() string {
	quoted := make([]string, 0, len(r.keys))
	for _, id := range r.IDs() {
		quoted = append(quoted, fmt.Sprintf("%q", id))
	}
	return strings.Join(quoted, ", ")
}
