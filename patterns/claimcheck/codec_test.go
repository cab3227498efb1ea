package claimcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	store   *fakeStore
	monitor *fakeMonitor
	codec   *Codec
}

func (f *CodecFixture) Setup() {
	f.store = newFakeStore()
	f.monitor = &fakeMonitor{}
	f.codec = f.newCodec()
}

func (f *CodecFixture) newCodec(options ...Option) *Codec {
	codec, err := New(nil, f.store, append([]Option{Options.Monitor(f.monitor)}, options...)...)
	f.So(err, should.BeNil)
	return codec
}

// jsonOfSize is a JSON string whose encoding is exactly n bytes.
func jsonOfSize(n int) string { return strings.Repeat("x", n-2) }

func (f *CodecFixture) TestTheContentTypeIsTheDelegates() {
	f.So(f.codec.ContentType(), should.Equal, serialization.JSONContentType)
}

func (f *CodecFixture) TestANilStoreIsRefused() {
	codec, err := New(nil, nil)
	f.So(codec, should.BeNil)
	f.So(err, should.NotBeNil)
}

func (f *CodecFixture) TestBelowTheThresholdThePayloadTravelsInlineAsTheDelegateWroteIt() {
	message := jsonOfSize(DefaultThreshold - 1)
	plain, _ := serialization.JSON{}.Serialize(message)
	body, err := f.codec.Serialize(message)
	f.So(err, should.BeNil)
	f.So(body[:3], should.Resemble, []byte{0xAC, 0x01, 0x00})
	f.So(bytes.Equal(body[3:], plain), should.BeTrue)
	f.So(f.store.Len(), should.Equal, 0)
	f.So(f.monitor.count("inlined"), should.Equal, 1)
}

func (f *CodecFixture) TestAPayloadExactlyAtTheThresholdIsOffloaded() {
	for _, size := range []int{DefaultThreshold, DefaultThreshold + 1} {
		body, err := f.codec.Serialize(jsonOfSize(size))
		f.So(err, should.BeNil)
		f.So(body[:3], should.Resemble, []byte{0xAC, 0x01, 0x01})
		key, ok := KeyOf(body)
		f.So(ok, should.BeTrue)
		f.So(string(body[3:]), should.Equal, key)
		kept, found, _ := f.store.Get(key)
		f.So(found, should.BeTrue)
		f.So(len(kept), should.Equal, size)
	}
	f.So(f.monitor.count("offloaded"), should.Equal, 2)
}

func (f *CodecFixture) TestOffloadAboveZeroOffloadsEverything() {
	codec := f.newCodec(Options.OffloadAbove(0))
	body, err := codec.Serialize(1)
	f.So(err, should.BeNil)
	f.So(IsClaimChecked(body), should.BeTrue)
}

func (f *CodecFixture) TestOffloadAboveSetsTheBoundary() {
	codec := f.newCodec(Options.OffloadAbove(10))
	small, _ := codec.Serialize(jsonOfSize(9))
	at, _ := codec.Serialize(jsonOfSize(10))
	f.So(IsClaimChecked(small), should.BeFalse)
	f.So(IsClaimChecked(at), should.BeTrue)
	negative := f.newCodec(Options.OffloadAbove(-1))
	f.So(negative.threshold, should.Equal, DefaultThreshold)
}

func (f *CodecFixture) TestEveryFormDecodesBackToTheMessage() {
	codec := f.newCodec(Options.OffloadAbove(100))
	for _, size := range []int{2, 99, 100, 5000} {
		message := jsonOfSize(size)
		body, err := codec.Serialize(message)
		f.So(err, should.BeNil)
		var decoded string
		f.So(codec.Deserialize(body, &decoded), should.BeNil)
		f.So(decoded, should.Equal, message)
	}
	f.So(f.store.deletes, should.Equal, 0) // the codec never deletes
}

func (f *CodecFixture) TestAnUnframedBodyIsReadAsTheDelegateWould() {
	var decoded map[string]int
	f.So(f.codec.Deserialize([]byte(`{"a":1}`), &decoded), should.BeNil)
	f.So(decoded["a"], should.Equal, 1)
	f.So(f.codec.Deserialize([]byte{}, &decoded), should.NotBeNil) // as JSON says
	f.So(f.store.gets, should.Equal, 0)
}

func (f *CodecFixture) TestBytesFramedByHandDecode() {
	var inline map[string]string
	f.So(f.codec.Deserialize(append([]byte{0xAC, 0x01, 0x00}, `{"from":"java"}`...), &inline), should.BeNil)
	f.So(inline["from"], should.Equal, "java")

	key, _ := f.store.MemoryStore.Put([]byte(`{"from":"python"}`))
	var claimed map[string]string
	f.So(f.codec.Deserialize(append([]byte{0xAC, 0x01, 0x01}, key...), &claimed), should.BeNil)
	f.So(claimed["from"], should.Equal, "python")
}

// A store that fails with a plain error ("503 Slow Down") is away, not the
// message's fault: the error is an outage (held, no attempt spent, never
// dead-lettered) that the settlement tries again.
func (f *CodecFixture) TestAStoreFailureIsAnOutageThatNamesTheKey() {
	key, _ := f.store.MemoryStore.Put([]byte(`1`))
	f.store.getFailures = 1
	var n int
	err := f.codec.Deserialize(claim(key), &n)
	f.So(messaging.IsOutage(err), should.BeTrue)
	f.So(messaging.IsRetryable(err), should.BeTrue)
	f.So(messaging.IsFatal(err), should.BeFalse)
	f.So(errors.Is(err, errStoreDown), should.BeTrue)
	f.So(err.Error(), should.Equal, fmt.Sprintf("acemq: cannot read the claim check %q from the store: store timed out", key))
	f.So(f.monitor.count("failed_get"), should.Equal, 1)
	f.So(f.codec.Deserialize(claim(key), &n), should.BeNil) // the store answers next time
	f.So(n, should.Equal, 1)
}

// A store can say otherwise: an error it marks Retryable spends the message's
// budget, one it marks Fatal parks it.
func (f *CodecFixture) TestAStoreCanSayItsFailureIsTheMessages() {
	key, _ := f.store.MemoryStore.Put([]byte(`1`))
	var n int
	f.store.getErr = messaging.Retryable(errStoreDown)
	err := f.codec.Deserialize(claim(key), &n)
	f.So(messaging.IsRetryable(err), should.BeTrue)
	f.So(messaging.IsOutage(err), should.BeFalse)
	f.So(f.monitor.count("failed_get"), should.Equal, 1)

	f.store.getErr = messaging.Fatal(errors.New("the object was archived"))
	err = f.codec.Deserialize(claim(key), &n)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(messaging.IsOutage(err), should.BeFalse)
	f.So(f.monitor.count("missing"), should.Equal, 1)
}

func (f *CodecFixture) TestAMissingKeyIsFatalWithTheSeedsText() {
	key := messaging.NewID()
	var n int
	err := f.codec.Deserialize(claim(key), &n)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(messaging.IsRetryable(err), should.BeFalse)
	f.So(err.Error(), should.Equal, fmt.Sprintf("acemq: the claim check %q is not in the store, so this message cannot be read. The payload was removed while a message referring to it was still deliverable -- the store's retention has to outlast every queue, every dead-letter queue, and any replay somebody might do by hand", key))
	f.So(f.monitor.count("missing"), should.Equal, 1)
}

func (f *CodecFixture) TestAKeyTheStoreRefusesIsFatal() {
	fs, err := NewFilesystemStore(f.T().(*testing.T).TempDir())
	f.So(err, should.BeNil)
	codec, _ := New(nil, fs)
	var n int
	err = codec.Deserialize(claim("../../etc/passwd"), &n)
	f.So(messaging.IsFatal(err), should.BeTrue)
	f.So(errors.Is(err, ErrInvalidKey), should.BeTrue)
}

func (f *CodecFixture) TestAnEmptyOrNonUTF8KeyIsFatal() {
	var n int
	f.So(messaging.IsFatal(f.codec.Deserialize([]byte{0xAC, 0x01, 0x01}, &n)), should.BeTrue)
	f.So(messaging.IsFatal(f.codec.Deserialize([]byte{0xAC, 0x01, 0x01, 0xff}, &n)), should.BeTrue)
	f.So(f.store.gets, should.Equal, 0)
}

func (f *CodecFixture) TestAnEmptyKeyFromPutRefusesTheWrite() {
	empty := ""
	f.store.putKey = &empty
	body, err := f.newCodec(Options.OffloadAbove(0)).Serialize(1)
	f.So(body, should.BeNil)
	f.So(messaging.IsFatal(err), should.BeTrue)
}

func (f *CodecFixture) TestAFailedPutRefusesTheWrite() {
	f.store.putErr = errStoreDown
	body, err := f.newCodec(Options.OffloadAbove(0)).Serialize(1)
	f.So(body, should.BeNil)
	f.So(errors.Is(err, errStoreDown), should.BeTrue)
	f.So(f.monitor.count("failed_put"), should.Equal, 1)
}

func (f *CodecFixture) TestKeyOfAndIsClaimChecked() {
	key, ok := KeyOf([]byte{0xAC, 0x01, 0x01, 'k'})
	f.So(key, should.Equal, "k")
	f.So(ok, should.BeTrue)
	for _, body := range [][]byte{nil, {0xAC}, {0xAC, 0x01}, {0xAC, 0x01, 0x00, 'k'}, {0xAC, 0x02, 0x01, 'k'}, {0xAC, 0x01, 0x02, 'k'}, []byte(`"k"`), {0xAC, 0x01, 0x01}} {
		_, ok := KeyOf(body)
		f.So(ok, should.BeFalse)
	}
	f.So(IsClaimChecked([]byte{0xAC, 0x01, 0x01}), should.BeTrue)
	f.So(IsClaimChecked([]byte{0xAC, 0x01, 0x00}), should.BeFalse)
}

func (f *CodecFixture) TestTheMemoryStoreCopiesBytesInAndOut() {
	store := NewMemoryStore()
	content := []byte("abc")
	key, _ := store.Put(content)
	content[0] = 'X'
	got, found, err := store.Get(key)
	f.So(found, should.BeTrue)
	f.So(err, should.BeNil)
	f.So(string(got), should.Equal, "abc")
	got[1] = 'Y'
	again, _, _ := store.Get(key)
	f.So(string(again), should.Equal, "abc")
	f.So(store.Delete(key), should.BeNil)
	f.So(store.Len(), should.Equal, 0)
}

// A delegate that frames its own payload (serialization.JSON) writes the
// same inline body as one framed by copy, and an offloaded payload is the
// delegate's bytes without the frame.
func (f *CodecFixture) TestFramingByTheDelegateMatchesFramingByCopy() {
	store := NewMemoryStore()
	framing, _ := New(serialization.JSON{}, store, Options.OffloadAbove(64))
	copying, _ := New(plainJSON{}, store, Options.OffloadAbove(64))
	for _, note := range []string{"", "short", strings.Repeat("x", 100)} {
		message := map[string]string{"note": note}
		framed, err := framing.Serialize(message)
		f.So(err, should.BeNil)
		copied, err := copying.Serialize(message)
		f.So(err, should.BeNil)
		if IsClaimChecked(framed) {
			key, _ := KeyOf(framed)
			held, _, _ := store.Get(key)
			want, _ := json.Marshal(message)
			f.So(len(framed), should.BeLessThan, 64)
			f.So(string(held), should.Equal, string(want))
			continue
		}
		f.So(framed, should.Resemble, copied)
	}
}

// A delegate that embeds serialization.JSON but writes its own payload is
// asked for its payload: only JSON itself frames in place.
func (f *CodecFixture) TestADelegateEmbeddingJSONWritesItsOwnPayload() {
	codec, _ := New(upperJSON{}, NewMemoryStore())
	body, err := codec.Serialize(map[string]string{"note": "quiet"})
	f.So(err, should.BeNil)
	f.So(string(body[frameLength:]), should.Equal, `{"NOTE":"QUIET"}`)
}

// upperJSON embeds JSON and writes upper-case JSON.
type upperJSON struct{ serialization.JSON }

func (u upperJSON) Serialize(message any) ([]byte, error) {
	payload, err := u.JSON.Serialize(message)
	return bytes.ToUpper(payload), err
}

// plainJSON is JSON as a delegate that does not frame its payload itself.
type plainJSON struct{}

func (plainJSON) ContentType() string { return serialization.JSON{}.ContentType() }
func (plainJSON) Serialize(message any) ([]byte, error) {
	return serialization.JSON{}.Serialize(message)
}
func (plainJSON) Deserialize(payload []byte, target any) error {
	return serialization.JSON{}.Deserialize(payload, target)
}
