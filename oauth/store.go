package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/toolsift/toolsift/internal/atomicfile"
)

// Grant is what a sign-in to one server leaves: the client toolsift was to the
// authorization server, and the tokens it was given. It belongs to the protected resource
// it was issued for (URL, and Resource as discovery named it) and to the issuer that
// granted it: it is stored under its URL (see Key), never under the server's name alone,
// and its tokens go to that URL's origin only.
type Grant struct {
	// Server is the server's name in toolsift's configuration when it signed in (for
	// messages), URL its address, and Resource the RFC 8707 resource indicator sent with
	// every token request.
	Server, URL, Resource string
	// Issuer is the authorization server; its token and revocation endpoints are kept so
	// that a refresh needs no discovery.
	Issuer, TokenEndpoint, RevocationEndpoint string
	// ClientID is the client the tokens were issued to. ClientSecret is kept only for a
	// client registered dynamically: a configured secret stays in the configuration.
	// AuthMethod is how the client authenticates at the token endpoint.
	ClientID, ClientSecret, AuthMethod string
	// Registered says the client was registered dynamically, for RedirectURI.
	Registered  bool
	RedirectURI string

	AccessToken, RefreshToken, TokenType string
	// Expiry is when the access token expires; zero if the server did not say. Lifetime
	// is how long it was given for, to refresh in good time.
	Expiry   time.Time
	Lifetime time.Duration
	// Scope is what was granted.
	Scope string
	// Wanted are scopes the server asked for since (a 403 insufficient_scope), for the next
	// sign-in to ask for too.
	Wanted []string
	// Refused says why the server refused a refresh: the grant needs a new sign-in.
	Refused string
	Saved   time.Time
	// InKeyring marks the file that stands for a grant kept in the OS keyring: it has no
	// secrets, and lets the grants be listed (a keyring cannot be).
	InKeyring bool `json:",omitempty"`
}

// SignedIn reports whether the grant has tokens that may still work.
func (g *Grant) SignedIn() bool {
	return g != nil && g.Refused == "" && (g.AccessToken != "" || g.RefreshToken != "")
}

// Key is the name a grant for the server at serverURL is stored under: a digest of the
// URL in its canonical form, so that two servers of one name at different addresses (two
// projects' "jira") never share a grant, and two names never share a file.
func Key(serverURL string) string {
	c := serverURL
	if u, err := url.Parse(serverURL); err == nil {
		c = canonical(u)
	}
	sum := sha256.Sum256([]byte(c))
	return "g-" + hex.EncodeToString(sum[:16])
}

// sameServer reports whether two server URLs are one protected resource.
func sameServer(a, b string) bool { return Key(a) == Key(b) }

// ErrNoGrant means no sign-in is stored for a server.
var ErrNoGrant = errors.New("not signed in")

// Store keeps grants under keys (see Key). Methods may be called concurrently, from
// several processes.
type Store interface {
	Load(ctx context.Context, key string) (*Grant, error) // ErrNoGrant if there is none
	Save(ctx context.Context, key string, g *Grant) error
	Delete(ctx context.Context, key string) error
	// List returns every stored grant by its key, secrets left out where the store keeps
	// them elsewhere.
	List(ctx context.Context) (map[string]*Grant, error)
}

// keyringService names toolsift's entries in the OS keyring.
const keyringService = "toolsift"

// keyringTimeout bounds a call to the OS keyring, which on some desktops asks the user to
// unlock it or hangs when no keyring daemon answers: toolsift then keeps the grant in a file.
const keyringTimeout = 3 * time.Second

// DefaultStore keeps grants in the OS keyring where one answers (macOS Keychain, Windows
// Credential Manager, the Secret Service), else in files under dir (toolsift's state
// folder) with mode 0600 in a 0700 folder. Set TOOLSIFT_TOKEN_STORE=file to use the files
// always (servers without a desktop session, tests).
func DefaultStore(dir string) Store {
	files := &FileStore{Dir: filepath.Join(dir, "oauth")}
	if os.Getenv("TOOLSIFT_TOKEN_STORE") == "file" {
		return files
	}
	return &keyringStore{files: files}
}

// FileStore keeps each grant in a JSON file of its own.
type FileStore struct {
	Dir string
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]`)

func (s *FileStore) path(key string) string {
	return filepath.Join(s.Dir, unsafeName.ReplaceAllString(key, "_")+".json")
}

func (s *FileStore) Load(_ context.Context, key string) (*Grant, error) {
	return s.read(s.path(key))
}

func (s *FileStore) read(path string) (*Grant, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoGrant
	}
	if err != nil {
		return nil, fmt.Errorf("reading a sign-in: %w", err)
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("reading a sign-in: %s is damaged (%v): delete it and sign in again with toolsift auth login", path, err)
	}
	return &g, nil
}

func (s *FileStore) Save(_ context.Context, key string, g *Grant) error {
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("saving the sign-in of %q: %w", g.Server, err)
	}
	// A folder made by an earlier version, or by hand, is made private too.
	_ = os.Chmod(s.Dir, 0o700)
	return atomicfile.Write(s.path(key), append(data, '\n'), 0o600)
}

func (s *FileStore) Delete(_ context.Context, key string) error {
	if err := os.Remove(s.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (s *FileStore) List(context.Context) (map[string]*Grant, error) {
	paths, err := filepath.Glob(filepath.Join(s.Dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	out := map[string]*Grant{}
	for _, p := range paths {
		g, err := s.read(p)
		if err != nil {
			continue // a damaged file is reported where it is used
		}
		out[strings.TrimSuffix(filepath.Base(p), ".json")] = g
	}
	return out, nil
}

// keyringStore keeps grants in the OS keyring, falling back on files: when there is no
// keyring, and for a grant too large for it (Windows' Credential Manager takes 2,560
// bytes, less than a JWT and a refresh token often are). A grant in the keyring has a file
// without its secrets beside it (InKeyring), so that grants can be listed.
type keyringStore struct {
	files *FileStore

	mu   sync.Mutex // guards down
	down error      // why the keyring is not used by this process, once it failed
}

// inKeyring runs a keyring call with a deadline. A keyring that fails or does not answer in
// time is not asked again by this process: a hung one would otherwise cost its timeout on
// every reload of every grant. That is said once.
func (s *keyringStore) inKeyring(ctx context.Context, f func() error) error {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down != nil {
		return down
	}
	ctx, cancel := context.WithTimeout(ctx, keyringTimeout)
	defer cancel()
	done := make(chan error, 1)
	// The call cannot be stopped: if it hangs, this goroutine ends with it, whenever.
	go func() { done <- f() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = fmt.Errorf("the OS keyring did not answer: %w", ctx.Err())
	}
	if err != nil && !errors.Is(err, keyring.ErrNotFound) && !errors.Is(err, keyring.ErrSetDataTooBig) {
		s.mu.Lock()
		if s.down == nil {
			s.down = err
			slog.Warn("the OS keyring is not used: sign-ins are kept in files (mode 0600) for now", "dir", s.files.Dir, "err", err)
		}
		s.mu.Unlock()
	}
	return err
}

func (s *keyringStore) Load(ctx context.Context, key string) (*Grant, error) {
	var secret string
	err := s.inKeyring(ctx, func() (err error) {
		secret, err = keyring.Get(keyringService, key)
		return err
	})
	if err != nil {
		g, ferr := s.files.Load(ctx, key)
		if ferr == nil && g.InKeyring {
			return nil, fmt.Errorf("the sign-in of %q is kept in the OS keyring, which toolsift cannot reach now (%v): unlock the keyring, or sign in again with toolsift auth login %s", g.Server, err, g.Server)
		}
		return g, ferr
	}
	var g Grant
	if err := json.Unmarshal([]byte(secret), &g); err != nil {
		return nil, fmt.Errorf("reading a sign-in from the OS keyring: %v: sign in again with toolsift auth login", err)
	}
	return &g, nil
}

func (s *keyringStore) Save(ctx context.Context, key string, g *Grant) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := s.inKeyring(ctx, func() error { return keyring.Set(keyringService, key, string(data)) }); err != nil {
		return s.files.Save(ctx, key, g)
	}
	// The file says where the grant is, without its secrets; it replaces the file of an
	// earlier save made while the keyring was away.
	stub := *g
	stub.AccessToken, stub.RefreshToken, stub.ClientSecret, stub.InKeyring = "", "", "", true
	return s.files.Save(ctx, key, &stub)
}

func (s *keyringStore) Delete(ctx context.Context, key string) error {
	// Not there, or no keyring at all, is no error: the grant, if any, is in a file.
	_ = s.inKeyring(ctx, func() error { return keyring.Delete(keyringService, key) })
	return s.files.Delete(ctx, key)
}

func (s *keyringStore) List(ctx context.Context) (map[string]*Grant, error) {
	return s.files.List(ctx)
}
