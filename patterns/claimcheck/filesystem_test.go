package claimcheck

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/smarty/assertions/should"
	"github.com/smarty/gunit"

	"github.com/warrenmq/messaging"
)

func TestFilesystemStoreFixture(t *testing.T) {
	gunit.Run(new(FilesystemStoreFixture), t)
}

type FilesystemStoreFixture struct {
	*gunit.Fixture
	dir    string
	store  *FilesystemStore
	opened []string
}

func (f *FilesystemStoreFixture) Setup() {
	f.dir = f.T().(*testing.T).TempDir()
	store, err := NewFilesystemStore(f.dir)
	f.So(err, should.BeNil)
	f.store = store
	f.store.opened = func(name string) { f.opened = append(f.opened, name) }
}

func (f *FilesystemStoreFixture) TestAPayloadIsWrittenUnderAUUIDAndReadBack() {
	key, err := f.store.Put([]byte("payload"))
	f.So(err, should.BeNil)
	f.So(uuidKey.MatchString(key), should.BeTrue)
	onDisk, err := os.ReadFile(filepath.Join(f.dir, key))
	f.So(err, should.BeNil)
	f.So(string(onDisk), should.Equal, "payload")
	got, found, err := f.store.Get(key)
	f.So(err, should.BeNil)
	f.So(found, should.BeTrue)
	f.So(string(got), should.Equal, "payload")
	entries, _ := os.ReadDir(f.dir)
	f.So(len(entries), should.Equal, 1) // the temporary file was renamed, not left
	f.So(f.opened, should.Resemble, []string{"." + key + ".tmp", key, ".", key})
}

func (f *FilesystemStoreFixture) TestAKeyNotThereIsNotFound() {
	got, found, err := f.store.Get(messaging.NewID())
	f.So(got, should.BeNil)
	f.So(found, should.BeFalse)
	f.So(err, should.BeNil)
}

func (f *FilesystemStoreFixture) TestOnlyUUIDKeysAreAccepted() {
	secret := filepath.Join(filepath.Dir(f.dir), "secret")
	f.So(os.WriteFile(secret, []byte("no"), 0o600), should.BeNil)
	defer os.Remove(secret)
	for _, key := range []string{"../../etc/passwd", "../secret", "/etc/passwd", "", ".", "..", "a/b", messaging.NewID() + "/..", "." + messaging.NewID() + ".tmp"} {
		got, found, err := f.store.Get(key)
		f.So(got, should.BeNil)
		f.So(found, should.BeFalse)
		f.So(errors.Is(err, ErrInvalidKey), should.BeTrue)
		f.So(errors.Is(f.store.Delete(key), ErrInvalidKey), should.BeTrue)
	}
	f.So(f.opened, should.BeEmpty)
}

func (f *FilesystemStoreFixture) TestDeleteRemovesTheFileAndForgivesAMissingOne() {
	key, _ := f.store.Put([]byte("x"))
	f.So(f.store.Delete(key), should.BeNil)
	_, found, _ := f.store.Get(key)
	f.So(found, should.BeFalse)
	f.So(f.store.Delete(key), should.BeNil)
}

func (f *FilesystemStoreFixture) TestAMissingDirectoryIsRefused() {
	_, err := NewFilesystemStore(filepath.Join(f.dir, "absent"))
	f.So(err, should.NotBeNil)
	file := filepath.Join(f.dir, "file")
	os.WriteFile(file, nil, 0o600)
	_, err = NewFilesystemStore(file)
	f.So(err, should.NotBeNil)
}

func (f *FilesystemStoreFixture) TestADirectoryRemovedLaterFailsWithAnError() {
	store, _ := NewFilesystemStore(f.dir)
	os.RemoveAll(f.dir)
	_, err := store.Put([]byte("x"))
	f.So(err, should.NotBeNil)
	_, found, err := store.Get(messaging.NewID())
	f.So(found, should.BeFalse)
	f.So(err, should.NotBeNil) // a store that cannot answer, so retryable
}
