// Package apitoken keeps the named bearer tokens of toolsift's HTTP service: each created
// once, shown once, and kept only as its SHA-256, so that the file holding them gives no
// token away. Several toolsift processes (the service, and the CLI that changes the list)
// share one file, under the OS's file lock.
package apitoken

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/atomicfile"
	"github.com/toolsift/toolsift/internal/filelock"
)

// Prefix starts every token toolsift makes, so that a leaked one is recognisable.
const Prefix = "tsk_"

// Token is a named token as kept: never the token itself.
type Token struct {
	Name    string    `json:"name"`
	SHA256  string    `json:"sha256"` // hex
	Created time.Time `json:"created"`
}

// Store is the file of named tokens. It is safe for concurrent use; Verify rereads the file
// when it changed, so that a token created or revoked by the CLI takes effect at once.
type Store struct {
	File string

	mu     sync.Mutex // guards the fields below
	mod    time.Time  // of the file when tokens were read
	size   int64
	tokens []Token
}

// Open returns the store of the file at path.
func Open(path string) *Store { return &Store{File: path} }

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ErrExists is returned by Create for a name already in use.
var ErrExists = errors.New("a token of that name exists")

// Create makes a token named name and returns it: the only time it is shown.
func (s *Store) Create(ctx context.Context, name string) (string, error) {
	if !validName.MatchString(name) {
		return "", fmt.Errorf("token name %q: use letters, digits, '.', '_' or '-' (at most 64), as in ci-runner", name)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	tok := Prefix + base64.RawURLEncoding.EncodeToString(raw)
	err := s.update(ctx, func(list []Token) ([]Token, error) {
		if slices.ContainsFunc(list, func(t Token) bool { return t.Name == name }) {
			return nil, fmt.Errorf("%w: %s (revoke it first: toolsift token revoke %s)", ErrExists, name, name)
		}
		return append(list, Token{Name: name, SHA256: digest(tok), Created: time.Now().UTC()}), nil
	})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// Revoke removes the token named name.
func (s *Store) Revoke(ctx context.Context, name string) error {
	return s.update(ctx, func(list []Token) ([]Token, error) {
		i := slices.IndexFunc(list, func(t Token) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no token is named %q (toolsift token list shows them)", name)
		}
		return slices.Delete(list, i, i+1), nil
	})
}

// List returns the tokens, oldest first.
func (s *Store) List() ([]Token, error) { return read(s.File) }

// Verify returns the name of the token tok, if it is one of the store's. A store that
// cannot be read has none.
func (s *Store) Verify(tok string) (name string, ok bool) {
	return s.VerifyDigest(sha256.Sum256([]byte(tok)))
}

// VerifyDigest is Verify for a token known by its SHA-256.
func (s *Store) VerifyDigest(sum [32]byte) (name string, ok bool) {
	d := hex.EncodeToString(sum[:])
	for _, t := range s.current() {
		if subtle.ConstantTimeCompare([]byte(t.SHA256), []byte(d)) == 1 {
			name, ok = t.Name, true
		}
	}
	return name, ok
}

// InUse reports whether named tokens are in use: the store's file exists, even with every
// token revoked. Then the service asks for a token: revoking the last one (a leaked one,
// say) must not open the service to anyone.
func (s *Store) InUse() bool {
	_, err := os.Stat(s.File)
	return err == nil
}

// current returns the tokens, read again if the file changed since they were read.
func (s *Store) current() []Token {
	st, err := os.Stat(s.File)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.tokens, s.mod, s.size = nil, time.Time{}, 0
		return nil
	}
	if st.ModTime().Equal(s.mod) && st.Size() == s.size {
		return s.tokens
	}
	list, err := read(s.File)
	if err != nil {
		return s.tokens // a file being replaced: what was read last stands
	}
	s.tokens, s.mod, s.size = list, st.ModTime(), st.Size()
	return list
}

func digest(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

func read(path string) ([]Token, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []Token
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s is damaged (%v): move it away, then create the tokens again", path, err)
	}
	return list, nil
}

// update changes the list under the file's lock and writes it whole.
func (s *Store) update(ctx context.Context, change func([]Token) ([]Token, error)) error {
	if err := os.MkdirAll(filepath.Dir(s.File), 0o700); err != nil {
		return err
	}
	release, err := filelock.Acquire(ctx, s.File+".lock")
	if err != nil {
		return err
	}
	defer release()
	list, err := read(s.File)
	if err != nil {
		return err
	}
	if list, err = change(list); err != nil {
		return err
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(s.File, append(data, '\n'), 0o600)
}
