package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFileName is the file in the data directory that a running Kite holds
// an exclusive flock on. The kernel drops the lock when the process dies, so
// a crash never leaves a stale lock behind.
const lockFileName = "kite.lock"

// dirLock is an exclusive, non-blocking flock on a data directory.
type dirLock struct{ f *os.File }

// lockDataDir takes the data directory's lock or fails at once with
// ErrDataDirLocked: waiting would make a second Kite hang instead of saying
// why it cannot start (etcd itself would block forever on bbolt's lock).
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded etcd: open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrDataDirLocked, dir)
		}
		return nil, fmt.Errorf("embedded etcd: lock %s: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

// unlock releases the lock; closing the descriptor drops the flock.
func (l *dirLock) unlock() { l.f.Close() }
