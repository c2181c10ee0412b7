package config

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolsift/toolsift/internal/atomicfile"
	"github.com/toolsift/toolsift/internal/filelock"
)

// Edit changes the configuration file at path: under a lock that every toolsift process
// takes for that file (path.lock beside it, never the file itself), it reads the file
// whole (nil if there is none), hands it to change, and writes what change returns whole
// (atomically, keeping the file's mode, 0600 for a new one). Two edits at once, by two
// commands or two processes, therefore each see the other's result: none is lost. An error
// from change leaves the file as it was.
func Edit(ctx context.Context, path string, change func(old []byte) ([]byte, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	release, err := filelock.Acquire(ctx, path+".lock")
	if err != nil {
		return err
	}
	defer release()
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		old, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	out, err := change(old)
	if err != nil {
		return err
	}
	mode := fs.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return atomicfile.Write(path, out, mode)
}
