package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

func TestWriteKeepsLinks(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles", "claude.json")
	os.MkdirAll(filepath.Dir(real), 0o700)
	os.WriteFile(real, []byte("old"), 0o600)
	link := filepath.Join(dir, ".claude.json")
	os.Symlink("dotfiles/claude.json", link)
	chain := filepath.Join(dir, "chain.json")
	os.Symlink(link, chain)
	dangling := filepath.Join(dir, "dangling.json")
	os.Symlink(filepath.Join(dir, "later", "made.json"), dangling)
	os.MkdirAll(filepath.Join(dir, "later"), 0o700)
	loop := filepath.Join(dir, "loop")
	os.Symlink(loop, loop)

	for _, tt := range []struct{ path, file string }{{link, real}, {chain, real}, {dangling, filepath.Join(dir, "later", "made.json")}} {
		if err := Write(tt.path, []byte("new "+tt.path), 0o640); err != nil {
			t.Fatalf("Write(%s): %v", tt.path, err)
		}
		if st, err := os.Lstat(tt.path); err != nil || st.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link: %v", tt.path, err)
		}
		if got, _ := os.ReadFile(tt.file); string(got) != "new "+tt.path {
			t.Errorf("%s: the file it leads to holds %q", tt.path, got)
		}
		if st, _ := os.Stat(tt.file); st.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want 0640", tt.file, st.Mode().Perm())
		}
	}
	if err := Write(loop, []byte("x"), 0o600); err == nil {
		t.Error("Write through a link loop succeeded")
	}
}

func TestWriteCheckedRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("old"), 0o600)
	changed := errors.New("changed")
	err := WriteChecked(path, []byte("new"), 0o600, func(target string) error {
		if target != path {
			t.Errorf("check got %s, want %s", target, path)
		}
		return changed
	})
	if !errors.Is(err, changed) {
		t.Errorf("WriteChecked = %v, want the check's error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("file = %q after a refused write", got)
	}
	if left := temps(t, filepath.Dir(path)); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestRemoveOrphans(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude.json")
	prefix := filepath.Join(dir, "..claude.json.toolsift-")
	old := time.Now().Add(-time.Hour)
	files := []struct {
		name string
		mod  time.Time
		kept bool
	}{
		{prefix + "999999999-123", time.Now(), false},                    // its process is gone
		{prefix + strconv.Itoa(os.Getppid()) + "-456", time.Now(), true}, // a live process's
		{prefix + "12345678", old, false},                                // an old version's, long left
		{prefix + "12345679", time.Now(), true},                          // an old version's, just written
		{filepath.Join(dir, ".other.json.toolsift-999999999-1"), old, true},
		{filepath.Join(dir, "claude.json.bak"), old, true},
	}
	for _, f := range files {
		os.WriteFile(f.name, []byte("secret"), 0o600)
		os.Chtimes(f.name, f.mod, f.mod)
	}
	RemoveOrphans(path)
	for _, f := range files {
		_, err := os.Stat(f.name)
		if kept := err == nil; kept != f.kept {
			t.Errorf("%s: kept = %v, want %v", filepath.Base(f.name), kept, f.kept)
		}
	}
}

func temps(t *testing.T, dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".*.toolsift-*"))
	return m
}

// TestWriteCheckedNoticesAWriteDuringTheCheck: a write to the file while the check reads it
// is not overwritten.
func TestWriteCheckedNoticesAWriteDuringTheCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("old"), 0o600)
	err := WriteChecked(path, []byte("new"), 0o600, func(target string) error {
		// What another program does between the check's read and the rename.
		return os.WriteFile(target, []byte("theirs, longer"), 0o600)
	})
	if !errors.Is(err, ErrChanged) {
		t.Errorf("WriteChecked = %v, want ErrChanged", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "theirs, longer" {
		t.Errorf("file = %q, want the other program's write", got)
	}
}
