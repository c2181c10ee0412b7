// Package trust records the configuration files a user approved to run although toolsift
// found them in a folder rather than being told of them. A cloned repository can hold a
// toolsift.yaml whose servers are commands; like Claude Code's approval of a project's
// .mcp.json, such a file runs only once its owner said so, and only as it was when they
// did: an approval is bound to the file's path and the SHA-256 of its content.
package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/toolsift/toolsift/internal/atomicfile"
)

// Store is the record of approvals, one JSON file. Processes that share it read it whole
// and replace it whole (atomically), so a reader never sees half of it; of two approvals
// written at the same moment one may be lost, and is asked for again.
type Store struct {
	file string
}

// fileName is the store's file within the state folder.
const fileName = "trusted.json"

// Open returns the store kept in dir, toolsift's state folder (see dirs.State).
func Open(dir string) *Store { return &Store{file: filepath.Join(dir, fileName)} }

// record is the store's content.
type record struct {
	// Files maps an absolute, clean path to its approval.
	Files map[string]approval `json:"files"`
}

type approval struct {
	SHA256   string    `json:"sha256"`
	Approved time.Time `json:"approved"`
}

// Sum is the digest an approval is bound to.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Trusted reports whether the file at path was approved with exactly this content.
func (s *Store) Trusted(path string, data []byte) (bool, error) {
	key, err := key(path)
	if err != nil {
		return false, err
	}
	r, err := s.read()
	if err != nil {
		return false, err
	}
	a, ok := r.Files[key]
	return ok && a.SHA256 == Sum(data), nil
}

// Trust approves the file at path with this content, replacing an earlier approval.
func (s *Store) Trust(path string, data []byte, now time.Time) error {
	key, err := key(path)
	if err != nil {
		return err
	}
	r, err := s.read()
	if err != nil {
		return err
	}
	r.Files[key] = approval{SHA256: Sum(data), Approved: now.UTC()}
	return s.write(r)
}

// Forget withdraws the approval of the file at path; it reports whether there was one.
func (s *Store) Forget(path string) (bool, error) {
	key, err := key(path)
	if err != nil {
		return false, err
	}
	r, err := s.read()
	if err != nil {
		return false, err
	}
	if _, ok := r.Files[key]; !ok {
		return false, nil
	}
	delete(r.Files, key)
	return true, s.write(r)
}

func key(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("approving %s: %w", path, err)
	}
	return abs, nil
}

// read returns the record; a missing file is an empty one. A file that cannot be parsed is
// an error rather than an empty record: writing over it would silently withdraw every
// approval, and reading it as empty only asks again, so say which file to look at.
func (s *Store) read() (*record, error) {
	r := &record{Files: map[string]approval{}}
	data, err := os.ReadFile(s.file)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading approvals: %w", err)
	}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("reading approvals: %s is damaged (%v): delete it, then approve your configs again with toolsift trust", s.file, err)
	}
	if r.Files == nil {
		r.Files = map[string]approval{}
	}
	return r, nil
}

func (s *Store) write(r *record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.file), 0o700); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	if err := atomicfile.Write(s.file, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving approvals: %w", err)
	}
	return nil
}
