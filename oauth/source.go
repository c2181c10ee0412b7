package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/filelock"
)

// NeedsLoginError means a server asks for a sign-in that toolsift does not have, or that
// the authorization server no longer honours.
type NeedsLoginError struct {
	Server string
	// Why says what happened, when there is more to say than "not signed in".
	Why string
	// PerUser marks a server each user of a shared service signs in to for themselves
	// (see Tokens.UserSource): the sign-in missing is the caller's own.
	PerUser bool
}

func (e *NeedsLoginError) Error() string {
	msg := fmt.Sprintf("server %q needs you to sign in: run toolsift auth login %s", e.Server, e.Server)
	if e.PerUser {
		msg = fmt.Sprintf("server %q needs you to sign in to it yourself (each person signs in for themselves)", e.Server)
	}
	if e.Why != "" {
		msg += " (" + e.Why + ")"
	}
	return msg
}

// ScopeError means a server refused a request for want of a scope its sign-in lacks (403
// insufficient_scope). The next sign-in asks for it.
type ScopeError struct {
	Server, Scope string
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("server %q needs more permission (%s) than it was granted: run toolsift auth login %s to grant it", e.Server, e.Scope, e.Server)
}

// Tokens hands out the Sources of the servers of one toolsift, over one store.
type Tokens struct {
	Store Store
	// Dir holds the locks that keep two toolsift processes from refreshing one grant at
	// once: a refresh token rotates, and some servers revoke the whole grant when a spent
	// one comes back.
	Dir string
	// HTTP makes token requests; nil means a client with a 30s timeout.
	HTTP *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Lock, if set, takes a grant's refresh lock instead of the OS file lock under Dir:
	// replicas of a service share their grants, and must share its lock too.
	Lock func(ctx context.Context, key string) (func(), error)

	mu      sync.Mutex // guards sources
	sources map[string]*Source
}

// NewTokens returns the Tokens of toolsift's state folder (see DefaultStore).
func NewTokens(stateDir string) *Tokens {
	return &Tokens{Store: DefaultStore(stateDir), Dir: filepath.Join(stateDir, "oauth")}
}

func (t *Tokens) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Tokens) http() *http.Client {
	if t.HTTP != nil {
		return t.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

// Source returns the token source of the server named server at serverURL, the same for
// every caller that names both: what one connection learns (a refused grant) the others
// know. oc is the server's oauth configuration, if any.
func (t *Tokens) Source(server, serverURL string, oc *config.OAuth) *Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := Key(serverURL)
	if s, ok := t.sources[server+"\x00"+key]; ok {
		return s
	}
	if t.sources == nil {
		t.sources = map[string]*Source{}
	}
	s := &Source{tokens: t, server: server, url: serverURL, key: key, oc: oc}
	t.sources[server+"\x00"+key] = s
	return s
}

// UserKey is the name user's own grant for the server at serverURL is stored under: user
// is identity.User's Key, digested so that no name or address is written in a file name.
func UserKey(user, serverURL string) string {
	sum := sha256.Sum256([]byte(user))
	return "u-" + hex.EncodeToString(sum[:12]) + "-" + Key(serverURL)
}

// UserSource returns the token source of user's own sign-in to the server named server at
// serverURL, for a service many people share: only that user's grant is ever read,
// refreshed or sent, and a refresh the authorization server refuses ends that user's
// sign-in alone. user is identity.User's Key; it must not be empty.
func (t *Tokens) UserSource(user, server, serverURL string, oc *config.OAuth) *Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := UserKey(user, serverURL)
	if s, ok := t.sources[server+"\x00"+key]; ok {
		return s
	}
	if t.sources == nil {
		t.sources = map[string]*Source{}
	}
	s := &Source{tokens: t, server: server, url: serverURL, key: key, oc: oc, perUser: true}
	t.sources[server+"\x00"+key] = s
	return s
}

// Anonymous returns a token source that never has a sign-in: a shared service's own
// connection to a server its users sign in to each, which learns that the server asks for
// OAuth (a NeedsLoginError) and never acts as anyone.
func Anonymous(server, serverURL string) *Source {
	return &Source{tokens: &Tokens{}, server: server, url: serverURL, anonymous: true, perUser: true}
}

// MovedError means the grant stored for a server's name is for another address: the
// server's URL changed, or another server of the same name (another project's) signed in.
// Its tokens are not sent to this one.
type MovedError struct {
	Server, From, To string
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("the sign-in stored for %q is for %s, not %s: sign in to this one with toolsift auth login %s", e.Server, shownURL(e.From), shownURL(e.To), e.Server)
}

// shownURL is a server URL as messages show it: without user info or query, where a key
// may be written, since a message can reach a log or the model.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unreadable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Is makes a MovedError an ErrNoGrant: there is no grant for this server.
func (e *MovedError) Is(target error) bool { return target == ErrNoGrant }

// Grant returns the grant of the server named name at serverURL. A grant stored under the
// server's name, as versions before grants were keyed by URL kept them, is moved under its
// key when it is for the same URL, and never used for another (a MovedError).
func (t *Tokens) Grant(ctx context.Context, name, serverURL string) (*Grant, error) {
	key := Key(serverURL)
	g, err := t.Store.Load(ctx, key)
	if !errors.Is(err, ErrNoGrant) {
		return g, err
	}
	old, err := t.Store.Load(ctx, name)
	if err != nil {
		return nil, ErrNoGrant
	}
	if !sameServer(old.URL, serverURL) {
		return nil, &MovedError{Server: name, From: old.URL, To: serverURL}
	}
	if err := t.Store.Save(ctx, key, old); err != nil {
		return nil, err
	}
	_ = t.Store.Delete(ctx, name)
	return old, nil
}

// reloadAfter is how long a Source uses the grant it read before reading it again, so that
// a sign-in made with toolsift auth login (a step-up, say) is picked up within seconds.
const reloadAfter = 2 * time.Second

// Source gives one server's connection its access token, refreshing it before it expires
// and once when the server refuses it. Its methods may be called concurrently.
type Source struct {
	tokens   *Tokens
	server   string // the server's name, for messages
	url, key string // the server's address, and the key of its grant
	oc       *config.OAuth
	// perUser marks a source of one user's sign-in (UserSource) or of none (Anonymous):
	// its grant is read under key alone, never under the server's name.
	perUser, anonymous bool

	mu     sync.Mutex // guards grant, moved and read; held across a refresh, so refreshes are one at a time
	grant  *Grant     // nil: none stored when last read
	moved  error      // why a grant stored for the name is not this server's, when grant is nil
	read   time.Time  // when grant was read
	failed time.Time  // the Saved of a grant the server refused, not to be tried again
}

// grantLocked returns the grant, read again if it is old. s.mu must be held.
func (s *Source) grantLocked(ctx context.Context) (*Grant, error) {
	if s.anonymous {
		return nil, nil
	}
	now := s.tokens.now()
	if !s.read.IsZero() && now.Sub(s.read) < reloadAfter {
		return s.grant, nil
	}
	var g *Grant
	var err error
	if s.perUser {
		g, err = s.tokens.Store.Load(ctx, s.key)
	} else {
		g, err = s.tokens.Grant(ctx, s.server, s.url)
	}
	s.moved = nil
	switch {
	case errors.Is(err, ErrNoGrant):
		g = nil
		var moved *MovedError
		if errors.As(err, &moved) {
			s.moved = moved
		}
	case err != nil:
		return nil, err
	}
	s.grant, s.read = g, now
	return g, nil
}

// Token returns the access token to send, refreshed first if it expires soon; "" when the
// server has no sign-in (a server that needs none is used without). A grant the
// authorization server refused is a NeedsLoginError.
func (s *Source) Token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.grantLocked(ctx)
	if err != nil {
		return "", err
	}
	if g == nil {
		if s.moved != nil {
			return "", &NeedsLoginError{Server: s.server, PerUser: s.perUser, Why: s.moved.Error()}
		}
		return "", nil
	}
	if g.Refused != "" {
		return "", &NeedsLoginError{Server: s.server, PerUser: s.perUser, Why: g.Refused}
	}
	if !s.expiring(g) {
		return g.AccessToken, nil
	}
	if g.RefreshToken == "" {
		s.failed = g.Saved
		return "", &NeedsLoginError{Server: s.server, PerUser: s.perUser, Why: "the sign-in expired"}
	}
	g, err = s.refreshLocked(ctx, g.AccessToken)
	if err != nil {
		return "", err
	}
	return g.AccessToken, nil
}

// expiring reports whether g's access token expires soon: within a quarter of its lifetime,
// at most a minute.
func (s *Source) expiring(g *Grant) bool {
	if g.Expiry.IsZero() {
		return g.AccessToken == ""
	}
	margin := time.Minute
	if g.Lifetime > 0 {
		margin = min(margin, g.Lifetime/4)
	}
	return s.tokens.now().Add(margin).After(g.Expiry)
}

// Refused is called when the server refused the access token spent: the grant is refreshed
// once, unless another caller (or process) has refreshed it since. It returns the token to
// try again with, or a NeedsLoginError.
func (s *Source) Refused(ctx context.Context, spent string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = time.Time{}
	g, err := s.grantLocked(ctx)
	if err != nil {
		return "", err
	}
	if g == nil || g.Refused != "" {
		return "", &NeedsLoginError{Server: s.server, PerUser: s.perUser}
	}
	if g.AccessToken != spent && !s.expiring(g) {
		return g.AccessToken, nil
	}
	if g.RefreshToken == "" {
		return "", &NeedsLoginError{Server: s.server, PerUser: s.perUser, Why: "the server refused its token"}
	}
	g, err = s.refreshLocked(ctx, spent)
	if err != nil {
		return "", err
	}
	return g.AccessToken, nil
}

// refreshLocked refreshes the grant, within the lock that other processes take too. It runs
// on a context of its own: a refresh the caller gave up on must still be saved, or the
// rotated refresh token is lost. s.mu must be held.
func (s *Source) refreshLocked(ctx context.Context, spent string) (*Grant, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Another process may have refreshed meanwhile.
	g, err := s.tokens.Store.Load(ctx, s.key)
	if err != nil {
		if errors.Is(err, ErrNoGrant) {
			return nil, &NeedsLoginError{Server: s.server, PerUser: s.perUser}
		}
		return nil, err
	}
	if g.Refused == "" && g.AccessToken != spent && !s.expiring(g) {
		s.grant, s.read = g, s.tokens.now()
		return g, nil
	}
	fresh, err := refresh(ctx, s.tokens.http(), g, s.client(g), s.tokens.now())
	var refused *RefusedError
	if errors.As(err, &refused) && (refused.Code == "invalid_grant" || refused.Code == "invalid_client" || refused.Code == "unauthorized_client") {
		// Not retried: the grant is spent (revoked, expired, or the server was deleted).
		// A new sign-in replaces it.
		g.Refused = "the authorization server refused to refresh the sign-in (" + refused.Code + ")"
		g.AccessToken, g.RefreshToken = "", ""
		g.Saved = s.tokens.now()
		if err := s.tokens.Store.Save(ctx, s.key, g); err != nil {
			return nil, err
		}
		s.grant, s.read = g, s.tokens.now()
		return nil, &NeedsLoginError{Server: s.server, PerUser: s.perUser, Why: g.Refused}
	}
	if err != nil {
		return nil, fmt.Errorf("refreshing the sign-in of %q: %w", s.server, err)
	}
	if err := s.tokens.Store.Save(ctx, s.key, fresh); err != nil {
		return nil, fmt.Errorf("saving the refreshed sign-in of %q: %w", s.server, err)
	}
	s.grant, s.read = fresh, s.tokens.now()
	return fresh, nil
}

// client is the client a grant's tokens were issued to: a configured secret comes from the
// configuration, a registered one from the grant.
func (s *Source) client(g *Grant) Client {
	c := Client{ID: g.ClientID, Secret: g.ClientSecret, AuthMethod: g.AuthMethod}
	if s.oc != nil && s.oc.ClientID == g.ClientID && s.oc.ClientSecret != "" {
		c.Secret = s.oc.ClientSecret
	}
	return c
}

// Want records scopes a server asked for (403 insufficient_scope), for the next sign-in.
func (s *Source) Want(ctx context.Context, scope string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.tokens.Store.Load(ctx, s.key)
	if err != nil {
		return err
	}
	before := len(g.Wanted)
	for _, sc := range strings.Fields(scope) {
		if !slices.Contains(g.Wanted, sc) {
			g.Wanted = append(g.Wanted, sc)
		}
	}
	if len(g.Wanted) == before {
		return nil
	}
	s.grant, s.read = nil, time.Time{}
	return s.tokens.Store.Save(ctx, s.key, g)
}

// Ready reports whether a sign-in is stored that was not refused: for a server waiting for
// one, the cue to connect again.
func (s *Source) Ready(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = time.Time{}
	g, err := s.grantLocked(ctx)
	return err == nil && g.SignedIn() && !g.Saved.Equal(s.failed)
}

// Reload makes the next use read the stored sign-in again: one may have been saved since
// it was read (by a shared service's sign-in pages).
func (s *Source) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read = time.Time{}
}

// Failed marks the stored sign-in as one the server refused as it is: Ready ignores it
// until another is saved.
func (s *Source) Failed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grant != nil {
		s.failed = s.grant.Saved
	}
}

// lock takes the grant's refresh lock, shared by every toolsift process: an OS lock, so a
// process killed mid-refresh leaves nothing that holds the next one up.
func (s *Source) lock(ctx context.Context) (func(), error) {
	if s.tokens.Lock != nil {
		return s.tokens.Lock(ctx, s.key)
	}
	release, err := filelock.Acquire(ctx, filepath.Join(s.tokens.Dir, s.key+".lock"))
	if err != nil {
		return nil, fmt.Errorf("waiting for another toolsift's refresh of %q: %w", s.server, err)
	}
	return release, nil
}

// Transport adds a server's access token to its requests and turns the answers that ask
// for a sign-in into errors that say so: a 401 with a Bearer challenge (after one refresh)
// is a NeedsLoginError, a 403 insufficient_scope a ScopeError. A server that needs no
// sign-in is reached as it would be without.
type Transport struct {
	Base   http.RoundTripper
	Source *Source
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	token, err := t.Source.Token(ctx)
	if err != nil {
		return nil, err
	}
	if token != "" && !sameOrigin(req.URL, t.Source.url) {
		// A token goes only to the origin it was issued for, whatever led the request
		// elsewhere (a redirect, an SSE endpoint naming another host).
		return nil, fmt.Errorf("server %q: not sending its sign-in to %s, another origin than %s's; if the server moved, put its new URL in the configuration and sign in again",
			t.Source.server, origin(req.URL), shownURL(t.Source.url))
	}
	resp, err := t.send(req, token)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		_, bearer := ParseChallenge(resp.Header)
		if !bearer && token == "" {
			return resp, nil // not OAuth: the transport reports it as it is
		}
		drain(resp)
		replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
		if token == "" || !replayable {
			return nil, &NeedsLoginError{Server: t.Source.server, PerUser: t.Source.perUser}
		}
		if token, err = t.Source.Refused(ctx, token); err != nil {
			return nil, err
		}
		if resp, err = t.send(req, token); err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusUnauthorized {
			drain(resp)
			t.Source.Failed()
			return nil, &NeedsLoginError{Server: t.Source.server, PerUser: t.Source.perUser, Why: "the server refused the sign-in"}
		}
	case http.StatusForbidden:
		if ch, ok := ParseChallenge(resp.Header); ok && ch.Error == "insufficient_scope" {
			drain(resp)
			_ = t.Source.Want(ctx, ch.Scope)
			return nil, &ScopeError{Server: t.Source.server, Scope: ch.Scope}
		}
	}
	return resp, nil
}

// send sends a copy of req with the token, its body replayed.
func (t *Transport) send(req *http.Request, token string) (*http.Response, error) {
	out := req.Clone(req.Context())
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		out.Body = body
	}
	if token != "" {
		out.Header.Set("Authorization", "Bearer "+token)
	}
	return t.Base.RoundTrip(out)
}

// sameOrigin reports whether u is at the origin (scheme, host and port) of serverURL.
func sameOrigin(u *url.URL, serverURL string) bool {
	s, err := url.Parse(serverURL)
	return err == nil && origin(u) == origin(s)
}

// origin is a URL's scheme, host and port, the port written out where it is the default.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func drain(resp *http.Response) {
	resp.Body.Close()
}
