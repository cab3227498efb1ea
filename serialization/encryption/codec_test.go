package encryption

import (
	"bytes"
	"errors"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
	"github.com/warrenmq/messaging/serialization"
)

func TestCodecFixture(t *testing.T) {
	gunit.Run(new(CodecFixture), t)
}

type CodecFixture struct {
	*gunit.Fixture
	monitor *fakeMonitor
	old     Key
	fresh   Key
}

type order struct {
	ID    string `json:"id"`
	Total int    `json:"total"`
}

func (f *CodecFixture) Setup() {
	f.monitor = &fakeMonitor{}
	f.old = Key{ID: "2025-12", Secret: secret(32, 1)}
	f.fresh = Key{ID: "2026-01", Secret: secret(32, 100)}
}

func (f *CodecFixture) codec(inner Inner, current Key, others ...Key) *Codec {
	ring, err := NewKeyRing(current, others...)
	f.So(err, should.BeNil)
	codec, err := New(inner, ring, Options.Monitor(f.monitor))
	f.So(err, should.BeNil)
	return codec
}

func (f *CodecFixture) TestTheContentTypeIsTheFamilysNotTheInnerOnes() {
	f.So(f.codec(nil, f.old).ContentType(), should.Equal, "application/vnd.acemq.encrypted")
}

func (f *CodecFixture) TestAMessageRoundTripsThroughJSONByDefault() {
	codec := f.codec(nil, f.old)
	body, err := codec.Serialize(order{ID: "o-1", Total: 42})
	f.So(err, should.BeNil)
	var decoded order
	f.So(codec.Deserialize(body, &decoded), should.BeNil)
	f.So(decoded, should.Equal, order{ID: "o-1", Total: 42})
	f.So(f.monitor.encrypted, should.Resemble, []string{"2025-12"})
	f.So(f.monitor.decrypted, should.Resemble, []string{"2025-12"})
}

func (f *CodecFixture) TestTheBodyIsFramedWithTheKeyIDInClearAndThePlaintextHidden() {
	plaintext := []byte("the plaintext of an order")
	body, err := f.codec(rawCodec{}, f.old).Serialize(plaintext)
	f.So(err, should.BeNil)
	f.So(body[:3], should.Resemble, []byte{0xAE, 0x01, 7})
	f.So(string(body[3:10]), should.Equal, "2025-12")
	f.So(len(body), should.Equal, 3+7+nonceSize+len(plaintext)+tagSize)
	f.So(bytes.Contains(body, plaintext), should.BeFalse)
}

func (f *CodecFixture) TestEveryMessageGetsItsOwnNonce() {
	codec := f.codec(rawCodec{}, f.old)
	nonces := map[string]bool{}
	for range 1000 {
		body, _ := codec.Serialize([]byte("same"))
		nonces[string(body[10:10+nonceSize])] = true
	}
	f.So(len(nonces), should.Equal, 1000)
}

func (f *CodecFixture) TestKeysOf16And24And32BytesWork() {
	for _, size := range []int{16, 24, 32} {
		codec := f.codec(rawCodec{}, Key{ID: "k", Secret: secret(size, 7)})
		body, err := codec.Serialize([]byte("x"))
		f.So(err, should.BeNil)
		var plaintext []byte
		f.So(codec.Deserialize(body, &plaintext), should.BeNil)
		f.So(string(plaintext), should.Equal, "x")
	}
}

func (f *CodecFixture) TestUnusableKeysAreRefused() {
	for _, key := range []Key{
		{ID: "k", Secret: secret(15, 0)},
		{ID: "k", Secret: secret(33, 0)},
		{ID: "k", Secret: nil},
		{ID: "", Secret: secret(32, 0)},
		{ID: string(make([]byte, 256)), Secret: secret(32, 0)},
		{ID: "\xff", Secret: secret(32, 0)},
	} {
		ring, err := NewKeyRing(key)
		f.So(ring, should.BeNil)
		f.So(err, should.NotBeNil)
	}
	_, err := NewKeyRing(f.old, Key{ID: f.old.ID, Secret: secret(16, 9)})
	f.So(err.Error(), should.ContainSubstring, "given twice")
}

func (f *CodecFixture) TestAnEmptyKeyIDIsRefusedSayingWhy() {
	_, err := NewKeyRing(Key{Secret: secret(32, 0)})
	f.So(err.Error(), should.ContainSubstring, "a key needs an id")
}

func (f *CodecFixture) TestANilRingIsRefused() {
	codec, err := New(nil, nil)
	f.So(codec, should.BeNil)
	f.So(err, should.NotBeNil)
}

func (f *CodecFixture) TestTheRingCopiesTheSecret() {
	key := Key{ID: "k", Secret: secret(32, 0)}
	codec := f.codec(rawCodec{}, key)
	body, _ := codec.Serialize([]byte("x"))
	key.Secret[0] ^= 0xFF
	var plaintext []byte
	f.So(codec.Deserialize(body, &plaintext), should.BeNil)
}

// Rotation: readers first hold both keys, then writers make the new one
// current; no message of either key is unreadable at any step.
func (f *CodecFixture) TestKeysRotateWithoutAFlagDay() {
	writerBefore := f.codec(rawCodec{}, f.old)
	reader := f.codec(rawCodec{}, f.old, f.fresh)
	writerAfter := f.codec(rawCodec{}, f.fresh, f.old)
	readerAfter := f.codec(rawCodec{}, f.fresh)

	before, _ := writerBefore.Serialize([]byte("before"))
	after, _ := writerAfter.Serialize([]byte("after"))
	var plaintext []byte
	f.So(reader.Deserialize(before, &plaintext), should.BeNil)
	f.So(string(plaintext), should.Equal, "before")
	f.So(reader.Deserialize(after, &plaintext), should.BeNil)
	f.So(string(plaintext), should.Equal, "after")
	f.So(readerAfter.Deserialize(after, &plaintext), should.BeNil)
	f.So(after[3:10], should.Resemble, []byte("2026-01"))
	f.So(f.monitor.decrypted, should.Resemble, []string{"2025-12", "2026-01", "2026-01"})
}

func (f *CodecFixture) TestAnUnknownKeyIsFatalAndNamedInTheError() {
	body, _ := f.codec(rawCodec{}, f.fresh).Serialize([]byte("x"))
	var plaintext []byte
	err := f.codec(rawCodec{}, f.old).Deserialize(body, &plaintext)
	f.So(errors.Is(err, ErrUnknownKey), should.BeTrue)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(messaging.IsRetryable(err), should.BeFalse)
	f.So(err.Error(), should.ContainSubstring, `"2026-01"`)
	f.So(err.Error(), should.ContainSubstring, `holds "2025-12"`)
	f.So(len(f.monitor.refused), should.Equal, 1)
}

func (f *CodecFixture) TestABodyThatWasNeverEncryptedIsFatal() {
	codec := f.codec(nil, f.old)
	plain, _ := serialization.JSON{}.Serialize(order{ID: "o-1"})
	for _, body := range [][]byte{plain, nil, {}} {
		var decoded order
		err := codec.Deserialize(body, &decoded)
		f.So(errors.Is(err, ErrNotEncrypted), should.BeTrue)
		f.So(messaging.IsFatal(err), should.BeTrue)
	}
}

// Every single changed byte, header, nonce, ciphertext or tag, is refused.
func (f *CodecFixture) TestATamperedBodyIsFatalWhateverByteChanged() {
	codec := f.codec(rawCodec{}, f.old)
	body, _ := codec.Serialize([]byte("pay 10 EUR to account 1234"))
	for i := range body {
		tampered := bytes.Clone(body)
		tampered[i] ^= 0x01
		var plaintext []byte
		err := codec.Deserialize(tampered, &plaintext)
		f.So(err, should.NotBeNil)
		f.So(messaging.IsFatal(err), should.BeTrue)
		f.So(plaintext, should.BeNil)
	}
	tampered := bytes.Clone(body)
	tampered[len(body)-1] ^= 0x80
	f.So(errors.Is(codec.Deserialize(tampered, new([]byte)), ErrTampered), should.BeTrue)
}

// The header is the associated data: a body moved to another key id of the
// same secret fails, though the ciphertext is untouched.
func (f *CodecFixture) TestTheKeyIDIsAuthenticated() {
	twin := Key{ID: "2025-13", Secret: f.old.Secret}
	codec := f.codec(rawCodec{}, f.old, twin)
	body, _ := codec.Serialize([]byte("x"))
	copy(body[3:10], "2025-13")
	err := codec.Deserialize(body, new([]byte))
	f.So(errors.Is(err, ErrTampered), should.BeTrue)
}

func (f *CodecFixture) TestAShortenedBodyIsFatal() {
	codec := f.codec(rawCodec{}, f.old)
	body, _ := codec.Serialize([]byte("x"))
	for n := 1; n < len(body); n++ {
		err := codec.Deserialize(body[:n], new([]byte))
		f.So(errors.Is(err, ErrTampered), should.BeTrue)
		f.So(messaging.IsFatal(err), should.BeTrue)
	}
}

func (f *CodecFixture) TestAnotherVersionIsFatalAndSaysWhichItIs() {
	codec := f.codec(rawCodec{}, f.old)
	body, _ := codec.Serialize([]byte("x"))
	body[1] = 0x02
	err := codec.Deserialize(body, new([]byte))
	f.So(errors.Is(err, ErrUnsupportedVersion), should.BeTrue)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(err.Error(), should.ContainSubstring, "0x02")
}

func (f *CodecFixture) TestTheInnerCodecsErrorsPassThroughUnmarked() {
	ring, _ := NewKeyRing(f.old)
	failing, _ := New(failingCodec{err: errInner}, ring)
	_, err := failing.Serialize(order{})
	f.So(errors.Is(err, errInner), should.BeTrue)

	body, _ := f.codec(rawCodec{}, f.old).Serialize([]byte("x"))
	err = failing.Deserialize(body, new([]byte))
	f.So(errors.Is(err, errInner), should.BeTrue)
	f.So(messaging.IsFatal(err), should.BeFalse)
}

func (f *CodecFixture) TestTheRingSaysWhatItHolds() {
	ring, _ := NewKeyRing(f.fresh, f.old)
	f.So(ring.Current(), should.Equal, "2026-01")
	f.So(ring.IDs(), should.Resemble, []string{"2025-12", "2026-01"})
}
