// Package atomicfile replaces files so that a reader, or a crash, never sees half of one:
// the new content is written to a temporary file beside the old, synced, and renamed over
// it. The files toolsift writes are the user's (client configurations, toolsift's own
// configuration) or hold their secrets, so a write also keeps a symbolic link a link, can be
// refused at the last moment when the file changed meanwhile, and a temporary file left by a
// write that was killed is removed by the next write beside it.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Write replaces the file at path with data, with permissions mode. A symbolic link at path
// stays one: the file it leads to is replaced, and created if the link dangles.
func Write(path string, data []byte, mode fs.FileMode) error {
	return WriteChecked(path, data, mode, nil)
}

// ErrChanged is returned by WriteChecked when the file changed while check read it.
var ErrChanged = errors.New("changed while it was being checked")

// WriteChecked is Write with a last check: check is called with the file that is about to
// be replaced once the new content is on disk, just before the rename, and an error from it
// leaves the file as it was and is returned as is. A check that reads a large file takes a
// while, and a writer may come in meanwhile: the file's size and modification time are
// taken before the check and again after it, and the rename follows at once only if they
// are the same, so that the window in which another write could be lost is that of two
// system calls, not of the check.
func WriteChecked(path string, data []byte, mode fs.FileMode, check func(target string) error) error {
	target, err := Target(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	RemoveOrphans(target)
	tmp, err := os.CreateTemp(dir, tempPrefix(target)+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	// Removed on every way out but the rename; a kill leaves it to RemoveOrphans.
	defer os.Remove(tmp.Name())
	fail := func(err error) error {
		tmp.Close()
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
	if check != nil {
		before, _ := os.Stat(target)
		if err := check(target); err != nil {
			return err
		}
		if after, _ := os.Stat(target); !sameStat(before, after) {
			return fmt.Errorf("writing %s: %w", path, ErrChanged)
		}
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Target returns the file that path names: path itself, or where its symbolic links lead,
// followed one by one so that a dangling link still names the file to create.
func Target(path string) (string, error) {
	for range 40 {
		st, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && st.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		if err != nil {
			return "", err
		}
		dest, err := os.Readlink(path)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(path), dest)
		}
		path = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// tempPrefix starts the names of path's temporary files: hidden, and recognisable as
// toolsift's and path's.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".toolsift-" }

// orphanAge is how old a temporary file of a live process must be to count as left over:
// no write takes this long.
const orphanAge = 10 * time.Minute

// RemoveOrphans removes the temporary files that writes of the file at path left behind
// when they were killed: those of a process that is gone, and any older than orphanAge
// (names of earlier versions carry no process ID). They may hold a whole copy of a file
// with secrets in it.
func RemoveOrphans(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		pid, _, hasPID := strings.Cut(rest, "-")
		n, err := strconv.Atoi(pid)
		gone := hasPID && err == nil && n != os.Getpid() && !alive(n)
		if gone || time.Since(info.ModTime()) > orphanAge {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// sameStat reports whether two stats of one path show the same file, unchanged: both
// missing, or the same file with the same size and modification time.
func sameStat(a, b fs.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
