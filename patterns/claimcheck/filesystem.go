package claimcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"

	"github.com/warrenmq/messaging"
)

// uuidKey is the only key shape the filesystem store accepts: the UUIDs it
// issues (and the ones the other AceMQ libraries' stores issue). A key comes
// from a message, which is whatever a publisher put there; ../../etc/passwd is
// a key too, and it is refused here before it is anywhere near a path.
var uuidKey = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// filePermissions are the payload files' permissions (before the umask): the
// consumers that read them are often another user of the same group.
const filePermissions = 0o640

// FilesystemStore keeps each payload in a file named by its key in one
// directory, for a filesystem every publisher and consumer mounts and that
// survives them (NFS, a shared volume). A payload is written to a temporary
// file and renamed into place, so a consumer that reads the key before the
// writer finished finds the whole payload or none. Files are opened through
// an os.Root on the directory and only UUID keys are accepted, so no key
// reaches a path outside it. It is safe for concurrent use, from several
// processes too.
type FilesystemStore struct {
	dir string
	// opened, when set (tests), is told every name the store opens in dir.
	opened func(name string)
}

// NewFilesystemStore returns a store in dir, which must exist: a shared mount
// that is missing is a deployment fault, and creating a local directory in
// its place would hide it.
func NewFilesystemStore(dir string) (*FilesystemStore, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("claimcheck: the store directory %q cannot be used; create or mount it first: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("claimcheck: the store path %q is not a directory", dir)
	}
	return &FilesystemStore{dir: dir}, nil
}

// Dir returns the store's directory.
func (s *FilesystemStore) Dir() string { return s.dir }

// Put writes content to a temporary file, syncs it, renames it to a new
// UUID and syncs the directory, and returns the UUID.
func (s *FilesystemStore) Put(content []byte) (key string, err error) {
	root, err := s.root()
	if err != nil {
		return "", err
	}
	defer root.Close()
	key = messaging.NewID()
	temporary := "." + key + ".tmp"
	s.open(temporary)
	file, err := root.OpenFile(temporary, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePermissions)
	if err != nil {
		return "", fmt.Errorf("claimcheck: cannot create a file in %q: %w", s.dir, err)
	}
	defer func() {
		if err != nil {
			_ = file.Close()
			_ = root.Remove(temporary)
		}
	}()
	if _, err = file.Write(content); err != nil {
		return "", fmt.Errorf("claimcheck: cannot write %d bytes to %q: %w", len(content), s.dir, err)
	}
	if err = file.Sync(); err != nil {
		return "", fmt.Errorf("claimcheck: cannot sync a payload to %q: %w", s.dir, err)
	}
	if err = file.Close(); err != nil {
		return "", fmt.Errorf("claimcheck: cannot close a payload in %q: %w", s.dir, err)
	}
	s.open(key)
	if err = root.Rename(temporary, key); err != nil {
		return "", fmt.Errorf("claimcheck: cannot rename a payload into place in %q: %w", s.dir, err)
	}
	s.open(".")
	if err := syncDirectory(root); err != nil {
		// The payload is whole under its key; only a crash of the host
		// before the directory reaches the disk could lose the name, so the
		// write is refused (and its file removed) rather than risk a message
		// that outlives its payload.
		_ = root.Remove(key)
		return "", fmt.Errorf("claimcheck: cannot sync the store directory %q after a write: %w", s.dir, err)
	}
	return key, nil
}

// Get reads the file named key. A key that is not a UUID is refused with
// ErrInvalidKey before any file is opened; a file that is not there is not
// found.
func (s *FilesystemStore) Get(key string) ([]byte, bool, error) {
	if !uuidKey.MatchString(key) {
		return nil, false, fmt.Errorf("%w: %q is not a UUID, so the filesystem store refuses to look it up", ErrInvalidKey, shown(key))
	}
	root, err := s.root()
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	s.open(key)
	content, err := root.ReadFile(key)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("claimcheck: cannot read %q in %q: %w", key, s.dir, err)
	}
	return content, true, nil
}

// Delete removes the file named key; a key already gone is not an error. A
// key that is not a UUID is refused with ErrInvalidKey.
func (s *FilesystemStore) Delete(key string) error {
	if !uuidKey.MatchString(key) {
		return fmt.Errorf("%w: %q is not a UUID, so the filesystem store refuses to delete it", ErrInvalidKey, shown(key))
	}
	root, err := s.root()
	if err != nil {
		return err
	}
	defer root.Close()
	s.open(key)
	if err := root.Remove(key); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("claimcheck: cannot delete %q in %q: %w", key, s.dir, err)
	}
	return nil
}

// syncDirectory makes the rename durable: a file's name lives in its
// directory, which is synced on its own.
func syncDirectory(root *os.Root) error {
	dir, err := root.Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// root opens the directory for one operation: os.Root refuses any name that
// would leave it, a second guard behind the UUID check.
func (s *FilesystemStore) root() (*os.Root, error) {
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, fmt.Errorf("claimcheck: cannot open the store directory %q (is it mounted?): %w", s.dir, err)
	}
	return root, nil
}

func (s *FilesystemStore) open(name string) {
	if s.opened != nil {
		s.opened(name)
	}
}

// shown is a key as an error message quotes it: a key from a message can be
// of any length, and the reason travels in a header.
func shown(key string) string {
	const most = 128
	if len(key) <= most {
		return key
	}
	return key[:most] + "..."
}
