package clients

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Apply writes the change: the backup first (setup, when there is none yet), then the file,
// atomically and with its permissions; an undo then removes the backup. A file that
// changed since it was read is not overwritten.
func (c *Change) Apply() error {
	if !c.Changed() {
		return nil
	}
	target := c.File
	if resolved, err := filepath.EvalSymlinks(c.File); err == nil {
		// Writing through a symlink (dotfiles kept in a repository) keeps the link.
		target = resolved
	}
	now, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", c.File, err)
	}
	if (err == nil) != c.existed || !bytes.Equal(now, c.Old) {
		return fmt.Errorf("%s %w; nothing written: run it again", c.File, ErrChanged)
	}
	if !c.Undo && c.existed && !c.backupExists {
		if err := writeNew(c.Backup, c.Old, c.mode); err != nil {
			return fmt.Errorf("writing the backup: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", c.File, err)
	}
	if err := WriteFileAtomic(target, c.New, c.mode); err != nil {
		return err
	}
	if c.Undo && c.backupExists {
		if err := os.Remove(c.Backup); err != nil {
			return fmt.Errorf("removing the backup: %w", err)
		}
	}
	return nil
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(path)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return f.Close()
}

// WriteFileAtomic replaces path with data, with permissions mode: it writes a temporary file
// beside it and renames it over path, so that a reader sees the old file or the new one,
// never half of one.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".toolsift-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
