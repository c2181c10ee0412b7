// Package filelock takes locks shared by every toolsift process on the machine: the OS's own
// advisory lock on a file (flock on Unix, LockFileEx on Windows). Such a lock belongs to the
// open file, so it ends with the process that holds it, however that process ends: a lock
// left by a killed process is taken at once, with no staleness guess.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// poll is how often a held lock is tried again while waiting.
const poll = 20 * time.Millisecond

// errBusy is what tryLock returns while another holds the lock.
var errBusy = errors.New("lock held")

// Acquire takes the exclusive lock at path, creating the file (mode 0600) and its folder
// (0700) if need be, and waits for it until ctx ends. The returned release lets it go; it
// may be called more than once. The file itself is never removed: removing it while another
// waits would let two processes hold locks on two different files of the same name.
func Acquire(ctx context.Context, path string) (release func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	for {
		err := tryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, errBusy) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another toolsift holding %s: %w", path, ctx.Err())
		case <-time.After(poll):
		}
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		_ = unlock(f)
		f.Close()
	}, nil
}
