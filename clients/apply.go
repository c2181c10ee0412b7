package clients

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolsift/toolsift/internal/atomicfile"
)

// Apply writes the change. For setup: the backup first, when there is none yet, verified
// as written; then the record of the servers moved; then the file, atomically and with its
// permissions. For undo: the file, then the backup and the record are forgotten. A file
// that changed since it was read is not overwritten: it is compared once more just before
// the rename, and ErrChanged leaves everything as it was.
func (c *Change) Apply() error {
	if !c.Changed() {
		return nil
	}
	target, err := atomicfile.Target(c.File)
	if err != nil {
		return fmt.Errorf("writing %s: %w", c.File, err)
	}
	unchanged := func(target string) error {
		now, err := os.ReadFile(target)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", c.File, err)
		}
		if (err == nil) != c.existed || !bytes.Equal(now, c.Old) {
			return fmt.Errorf("%s %w; nothing written: run it again", c.File, ErrChanged)
		}
		return nil
	}
	if err := unchanged(target); err != nil {
		return err
	}
	wroteBackup := false
	if !c.Undo && c.record != nil {
		if c.backup != nil {
			if err := c.state.writeBackup(c.backup); err != nil {
				return err
			}
			wroteBackup = true
		}
		if err := c.state.writeRecord(c.record); err != nil {
			c.state.restore(wroteBackup)
			return fmt.Errorf("writing setup's record: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", c.File, err)
	}
	if err := atomicfile.WriteChecked(target, c.New, c.mode, unchanged); err != nil {
		if !c.Undo && c.record != nil {
			c.state.restore(wroteBackup)
		}
		if errors.Is(err, atomicfile.ErrChanged) {
			return fmt.Errorf("%s %w; nothing written: run it again", c.File, ErrChanged)
		}
		return err
	}
	switch {
	case c.Undo:
		return c.state.remove()
	case c.state.legacy != "" && wroteBackup:
		// The earlier version's backup now lives in the state folder.
		if err := os.Remove(c.state.legacy); err != nil {
			return fmt.Errorf("removing %s, now kept in %s: %w", c.state.legacy, c.Backup, err)
		}
	}
	return nil
}
