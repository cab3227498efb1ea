package encryption

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/serialization"
)

// ContentType is the content type of every encrypted payload, whatever its
// inner format.
const ContentType = "application/vnd.acemq.encrypted"

// The framing's constants.
const (
	magic     = 0xAE
	version   = 0x01
	nonceSize = 12
	tagSize   = 16
)

// Errors of a body that cannot be decrypted; each comes marked
// messaging.Fatal. Test with errors.Is.
var (
	// ErrNotEncrypted: the body does not start with the framing's 0xAE.
	ErrNotEncrypted = errors.New("encryption: the body was never encrypted")
	// ErrUnsupportedVersion: the framing's version byte is not 0x01.
	ErrUnsupportedVersion = errors.New("encryption: the body's framing version is not one this library reads")
	// ErrUnknownKey: the body names a key id the ring does not hold.
	ErrUnknownKey = errors.New("encryption: the body was encrypted with a key this consumer does not hold")
	// ErrTampered: the body is shorter than its framing, or its
	// authentication tag does not match (a changed byte, anywhere).
	ErrTampered = errors.New("encryption: the body was damaged or tampered with")
)

// Inner is the codec whose output is encrypted: it encodes messages on write
// and decodes the decrypted bytes on read.
type Inner interface {
	serialization.Serializer
	serialization.Deserializer
}

// Codec is a serialization.Serializer and Deserializer that encrypts what its
// inner codec writes. Install it on both sides of a queue, with the same inner
// codec and rings that share keys:
//
//	codec, err := encryption.New(nil, ring) // JSON inside
//	connector := serialization.New(transport,
//		serialization.Options.Serializer(codec),
//		serialization.Options.AddDeserializer(codec), // under application/vnd.acemq.encrypted
//		...)
//
// It is safe for concurrent use when its inner codec is.
type Codec struct {
	inner   Inner
	ring    *KeyRing
	monitor Monitor
}

// New returns a Codec that encrypts inner's payloads (nil means
// serialization.JSON) with ring's current key and decrypts with any of its
// keys. The error is a nil ring.
func New(inner Inner, ring *KeyRing, options ...Option) (*Codec, error) {
	if ring == nil {
		return nil, errors.New("encryption: New needs a key ring; build one with encryption.NewKeyRing")
	}
	if inner == nil {
		inner = serialization.JSON{}
	}
	c := newConfig(options)
	return &Codec{inner: inner, ring: ring, monitor: c.monitor}, nil
}

// ContentType returns application/vnd.acemq.encrypted: the inner codec's own
// content type is not written.
func (c *Codec) ContentType() string { return ContentType }

// Serialize encodes message with the inner codec and encrypts the result with
// the ring's current key under a fresh random nonce.
func (c *Codec) Serialize(message any) ([]byte, error) {
	plaintext, err := c.inner.Serialize(message)
	if err != nil {
		return nil, err
	}
	key := c.ring.keys[c.ring.current]
	var nonce [nonceSize]byte
	_, _ = rand.Read(nonce[:]) // never fails: crypto/rand aborts the program instead
	body := seal(key, nonce[:], plaintext)
	c.monitor.Encrypted(c.ring.current)
	return body, nil
}

// seal frames plaintext encrypted with key under nonce: the header, the
// nonce, then the ciphertext and its tag, the header authenticated.
func seal(key ringKey, nonce, plaintext []byte) []byte {
	body := make([]byte, 0, len(key.header)+nonceSize+len(plaintext)+tagSize)
	body = append(body, key.header...)
	body = append(body, nonce...)
	return key.aead.Seal(body, nonce, plaintext, key.header)
}

// Deserialize decrypts payload with the key it names and decodes the
// plaintext into target with the inner codec. A body that cannot be
// decrypted fails with an error marked messaging.Fatal that matches
// ErrNotEncrypted, ErrUnsupportedVersion, ErrUnknownKey or ErrTampered.
func (c *Codec) Deserialize(payload []byte, target any) error {
	plaintext, keyID, err := c.open(payload)
	if err != nil {
		c.monitor.Refused(err)
		return messaging.Fatal(err)
	}
	c.monitor.Decrypted(keyID)
	return c.inner.Deserialize(plaintext, target)
}

// open checks payload's framing and decrypts it, returning the plaintext and
// the id of the key that opened it.
func (c *Codec) open(payload []byte) ([]byte, string, error) {
	if len(payload) == 0 || payload[0] != magic {
		return nil, "", notEncrypted(payload)
	}
	if len(payload) < 3 {
		return nil, "", fmt.Errorf("%w: the body is %d bytes, too short for the framing's header; it was cut short on the way", ErrTampered, len(payload))
	}
	if payload[1] != version {
		return nil, "", fmt.Errorf("%w: version 0x%02x, where this library reads 0x%02x; upgrade this consumer, or have the publisher write version 0x%02x", ErrUnsupportedVersion, payload[1], version, version)
	}
	headerSize := 3 + int(payload[2])
	if len(payload) < headerSize+nonceSize+tagSize {
		return nil, "", fmt.Errorf("%w: the body is %d bytes and its framing needs at least %d; it was cut short on the way", ErrTampered, len(payload), headerSize+nonceSize+tagSize)
	}
	keyID := string(payload[3:headerSize])
	key, held := c.ring.keys[keyID]
	if !held {
		return nil, "", fmt.Errorf("%w: key %q; this consumer holds %s. Add the key to its KeyRing (a reader must hold a key before any writer makes it current)", ErrUnknownKey, keyID, c.ring.held())
	}
	nonce := payload[headerSize : headerSize+nonceSize]
	plaintext, err := key.aead.Open(nil, nonce, payload[headerSize+nonceSize:], payload[:headerSize])
	if err != nil {
		return nil, "", fmt.Errorf("%w: the authentication tag does not match under key %q, so some byte of the body or of its header changed after it was encrypted (or another secret was given this key's id); nothing of it can be trusted", ErrTampered, keyID)
	}
	return plaintext, keyID, nil
}

// notEncrypted describes a body without the framing.
func notEncrypted(payload []byte) error {
	if len(payload) == 0 {
		return fmt.Errorf("%w: the body is empty, where an encrypted one starts with 0xAE; the publisher wrote %s without encrypting", ErrNotEncrypted, ContentType)
	}
	return fmt.Errorf("%w: it starts with 0x%02x, where an encrypted one starts with 0xAE; the publisher labelled a plain body %s: encrypt it with this codec, or publish it under its own content type", ErrNotEncrypted, payload[0], ContentType)
}
