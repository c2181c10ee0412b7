package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/toolsift/toolsift/internal/atomicfile"
)

// Grant is what a sign-in to one server leaves: the client toolsift was to the
// authorization server, and the tokens it was given. It is kept per server and is bound to
// the issuer that granted it: a server whose authorization server changed signs in anew.
type Grant struct {
	// Server is the server's name in toolsift's configuration, URL its address, and
	// Resource the RFC 8707 resource indicator sent with every token request.
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
}

// SignedIn reports whether the grant has tokens that may still work.
func (g *Grant) SignedIn() bool {
	return g != nil && g.Refused == "" && (g.AccessToken != "" || g.RefreshToken != "")
}

// ErrNoGrant means no sign-in is stored for a server.
var ErrNoGrant = errors.New("not signed in")

// Store keeps grants. Methods may be called concurrently, from several processes.
type Store interface {
	Load(ctx context.Context, server string) (*Grant, error) // ErrNoGrant if there is none
	Save(ctx context.Context, g *Grant) error
	Delete(ctx context.Context, server string) error
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

func (s *FileStore) path(server string) string {
	return filepath.Join(s.Dir, unsafeName.ReplaceAllString(server, "_")+".json")
}

func (s *FileStore) Load(_ context.Context, server string) (*Grant, error) {
	data, err := os.ReadFile(s.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoGrant
	}
	if err != nil {
		return nil, fmt.Errorf("reading the sign-in of %q: %w", server, err)
	}
	var g Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("reading the sign-in of %q: %s is damaged (%v): sign in again with toolsift auth login %s", server, s.path(server), err, server)
	}
	return &g, nil
}

func (s *FileStore) Save(_ context.Context, g *Grant) error {
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("saving the sign-in of %q: %w", g.Server, err)
	}
	// A folder made by an earlier version, or by hand, is made private too.
	_ = os.Chmod(s.Dir, 0o700)
	return atomicfile.Write(s.path(g.Server), append(data, '\n'), 0o600)
}

func (s *FileStore) Delete(_ context.Context, server string) error {
	if err := os.Remove(s.path(server)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// keyringStore keeps grants in the OS keyring, falling back on files: when there is no
// keyring, and for a grant too large for it (Windows' Credential Manager takes 2,560
// bytes, less than a JWT and a refresh token often are). A grant is in one of the two,
// never both.
type keyringStore struct {
	files *FileStore
}

// inKeyring runs a keyring call with a deadline; a keyring that does not answer in time
// counts as none.
func inKeyring(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, keyringTimeout)
	defer cancel()
	done := make(chan error, 1)
	// The call cannot be stopped: if it hangs, this goroutine ends with it, whenever.
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("the OS keyring did not answer: %w", ctx.Err())
	}
}

func (s *keyringStore) Load(ctx context.Context, server string) (*Grant, error) {
	var secret string
	err := inKeyring(ctx, func() (err error) {
		secret, err = keyring.Get(keyringService, server)
		return err
	})
	if err != nil {
		return s.files.Load(ctx, server)
	}
	var g Grant
	if err := json.Unmarshal([]byte(secret), &g); err != nil {
		return nil, fmt.Errorf("reading the sign-in of %q from the OS keyring: %v: sign in again with toolsift auth login %s", server, err, server)
	}
	return &g, nil
}

func (s *keyringStore) Save(ctx context.Context, g *Grant) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := inKeyring(ctx, func() error { return keyring.Set(keyringService, g.Server, string(data)) }); err != nil {
		return s.files.Save(ctx, g)
	}
	// The file of an earlier save, when the keyring was away, must not outlive this one.
	return s.files.Delete(ctx, g.Server)
}

func (s *keyringStore) Delete(ctx context.Context, server string) error {
	// Not there, or no keyring at all, is no error: the grant, if any, is in a file.
	_ = inKeyring(ctx, func() error { return keyring.Delete(keyringService, server) })
	return s.files.Delete(ctx, server)
}
