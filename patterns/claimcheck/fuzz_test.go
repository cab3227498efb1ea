package claimcheck

import (
	"bytes"
	"strings"
	"testing"

	"github.com/warrenmq/messaging"
)

// FuzzFrame feeds arbitrary bodies to the frame decoder and to the codec over
// a filesystem store. Nothing panics, KeyOf agrees with IsClaimChecked, and
// the store never opens a name that is not a bare UUID in its own directory.
func FuzzFrame(f *testing.F) {
	dir := f.TempDir()
	store, err := NewFilesystemStore(dir)
	if err != nil {
		f.Fatal(err)
	}
	known, err := store.Put([]byte(`{"a":1}`))
	if err != nil {
		f.Fatal(err)
	}
	store.opened = func(name string) {
		if !uuidKey.MatchString(name) {
			panic("the store opened " + name)
		}
	}
	codec, err := New(nil, store)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		nil, {0xAC}, {0xAC, 0x01}, {0xAC, 0x01, 0x00}, {0xAC, 0x01, 0x01},
		append([]byte{0xAC, 0x01, 0x00}, `{"a":1}`...),
		append([]byte{0xAC, 0x01, 0x01}, known...),
		append([]byte{0xAC, 0x01, 0x01}, messaging.NewID()...),
		append([]byte{0xAC, 0x01, 0x01}, "../../etc/passwd"...),
		append([]byte{0xAC, 0x01, 0x01}, "/etc/passwd"...),
		append([]byte{0xAC, 0x01, 0x01}, strings.ToUpper(known)+"/../x"...),
		{0xAC, 0x01, 0x02, 'x'}, {0xAC, 0x00, 0x01, 'x'}, {0xAC, 0x01, 0x01, 0xff, 0xfe},
		[]byte(`{"a":1}`), []byte(`"\u00ac"`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		key, ok := KeyOf(body)
		if ok && (!IsClaimChecked(body) || !bytes.Equal(body[3:], []byte(key))) {
			t.Fatalf("KeyOf(%q) = %q, but the body is not that claim check", body, key)
		}
		if !ok && key != "" {
			t.Fatalf("KeyOf(%q) returned %q without ok", body, key)
		}
		var target any
		err := codec.Deserialize(body, &target)
		if IsClaimChecked(body) && err != nil && !messaging.IsFatal(err) && !messaging.IsRetryable(err) {
			// the delegate's own decode error on a fetched payload
			if _, found, _ := store.Get(key); !found {
				t.Fatalf("a claim check of a key the store lacks failed neither fatal nor retryable: %v", err)
			}
		}
	})
}
