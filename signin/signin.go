// Package signin signs the people of a shared service in to the servers they act on as
// themselves, in their browsers. A sign-in link (sent to the user's client as a URL
// elicitation, and written in the error of a call that needs it) opens /connect/ID, a
// page that first asks the team's identity provider who opened it: the link was made for
// one user, and a link opened by anyone else signs nobody in (the phishing the MCP spec
// warns of, where one user has another finish a sign-in for them). Only then does the
// browser go on to the server's authorization server, whose answer comes back to
// /oauth/callback and is kept as that user's grant.
package signin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/oauth"
)

// Paths the pages are served at.
const (
	ConnectPath  = "/connect/"
	CallbackPath = "/oauth/callback"
)

// linkTTL is how long a sign-in link, and each step of its flow, may wait.
const linkTTL = 10 * time.Minute

// Identity is toolsift's client at the team's identity provider, with which the pages
// learn who opened a link.
type Identity struct {
	Issuer, ClientID, ClientSecret string
}

// Pending keeps the sign-ins under way: in memory (nil Pages.Pending), or where every
// replica of a service reads them (state.Redis, sealed), so that a browser may open a link
// on any replica and come back to another. A value lives at most its ttl.
type Pending interface {
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Take returns the value and deletes it: a state is good once.
	Take(ctx context.Context, key string) ([]byte, bool, error)
	Delete(ctx context.Context, key string) error
}

// Pages serves the sign-in pages. Its methods may be called concurrently.
type Pages struct {
	Tokens *oauth.Tokens
	// PublicURL is the service's address as browsers reach it.
	PublicURL string
	Identity  Identity
	// Servers are the configured servers, by name; ConfigFile names their file.
	Servers    map[string]config.Server
	ConfigFile string
	Logger     *slog.Logger
	// HTTP makes the requests to the identity provider; nil means a client with a 30s
	// timeout.
	HTTP *http.Client
	// SignedIn, if set, is told of each sign-in saved: the user's key, the server, and the
	// link's ID.
	SignedIn func(user, server, id string)
	// Pending keeps the sign-ins under way; nil means this process's memory.
	Pending Pending

	memOnce sync.Once
	mem     *memory // Pending when it is nil
}

// link is a sign-in link: made for one user (identity.User's Key) and one server.
type link struct {
	User   string `json:"user"`
	Server string `json:"server"`
}

// flow is one step of a link's flow under way: identifying who opened it (OAuth empty),
// or the server's authorization (OAuth set, the user identified).
type flow struct {
	Link     string          `json:"link"` // its ID
	User     string          `json:"user"`
	Server   string          `json:"server"`
	Verifier string          `json:"verifier,omitempty"` // of the identity step
	Nonce    string          `json:"nonce,omitempty"`
	OAuth    json.RawMessage `json:"oauth,omitempty"` // an oauth.Flow
}

func (p *Pages) log() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

func (p *Pages) http() *http.Client {
	if p.HTTP != nil {
		return p.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (p *Pages) pending() Pending {
	if p.Pending != nil {
		return p.Pending
	}
	p.memOnce.Do(func() { p.mem = &memory{m: map[string]entry{}} })
	return p.mem
}

// ErrTooMany means too many sign-ins are under way.
var ErrTooMany = errors.New("too many sign-ins under way: finish or wait out one")

// linkFor is the key of the link made for user to sign in to server.
func linkFor(user, server string) string {
	sum := sha256.Sum256([]byte(user + "\x00" + server))
	return "linkfor:" + hex.EncodeToString(sum[:16])
}

// Link returns a sign-in link for u to sign in to server, and its ID: the one made before
// while it lasts. The link is worth nothing to anyone else: the page asks the identity
// provider who opened it.
func (p *Pages) Link(u identity.User, server string) (url, id string, err error) {
	if _, ok := p.Servers[server]; !ok {
		return "", "", fmt.Errorf("no server %q", server)
	}
	if u.Kind != identity.Person {
		return "", "", errors.New("only a person signs in: a token acts as no one")
	}
	ctx := context.Background()
	st := p.pending()
	if prev, ok, _ := st.Get(ctx, linkFor(u.Key, server)); ok {
		if _, ok, _ := st.Get(ctx, "link:"+string(prev)); ok {
			return p.PublicURL + ConnectPath + string(prev), string(prev), nil
		}
	}
	id = random()
	data, _ := json.Marshal(link{User: u.Key, Server: server})
	if err := st.Put(ctx, "link:"+id, data, linkTTL); err != nil {
		return "", "", err
	}
	if err := st.Put(ctx, linkFor(u.Key, server), []byte(id), linkTTL); err != nil {
		return "", "", err
	}
	return p.PublicURL + ConnectPath + id, id, nil
}

// spend ends a link: it signs nobody in from now on.
func (p *Pages) spend(ctx context.Context, id string, l link) {
	st := p.pending()
	_ = st.Delete(ctx, "link:"+id)
	_ = st.Delete(ctx, linkFor(l.User, l.Server))
}

func (p *Pages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Nothing here is to be framed, cached, or sent on as a referrer: the pages carry
	// codes and states in their URLs.
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	if r.Method != http.MethodGet {
		page(w, http.StatusMethodNotAllowed, "This page is opened in a browser.")
		return
	}
	switch {
	case strings.HasPrefix(r.URL.Path, ConnectPath):
		p.connect(w, r, strings.TrimPrefix(r.URL.Path, ConnectPath))
	case r.URL.Path == CallbackPath:
		p.callback(w, r)
	default:
		http.NotFound(w, r)
	}
}

// connect opens a link: the browser goes to the identity provider first.
func (p *Pages) connect(w http.ResponseWriter, r *http.Request, id string) {
	ctx := r.Context()
	data, ok, err := p.pending().Get(ctx, "link:"+id)
	var l link
	if err != nil || !ok || json.Unmarshal(data, &l) != nil {
		page(w, http.StatusNotFound, "This sign-in link has expired or was used. Call the tool again for a new one.")
		return
	}
	cfg, _, err := p.identity(ctx)
	if err != nil {
		p.log().Error("sign-in: the identity provider is not reachable", "error", err)
		page(w, http.StatusBadGateway, "The identity provider cannot be reached; try again in a minute.")
		return
	}
	f := flow{Link: id, User: l.User, Server: l.Server, Verifier: oauth2.GenerateVerifier(), Nonce: random()}
	state := random()
	if !p.putFlow(ctx, w, state, f) {
		return
	}
	http.Redirect(w, r, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce)), http.StatusFound)
}

// putFlow keeps f under state; it answers the page itself when it cannot.
func (p *Pages) putFlow(ctx context.Context, w http.ResponseWriter, state string, f flow) bool {
	data, _ := json.Marshal(f)
	if err := p.pending().Put(ctx, "flow:"+state, data, linkTTL); err != nil {
		p.log().Warn("sign-in not kept", "error", err)
		page(w, http.StatusServiceUnavailable, "toolsift cannot keep this sign-in now; try again in a minute.")
		return false
	}
	return true
}

// identity returns toolsift's OAuth client at the identity provider, and the verifier of
// its ID tokens.
func (p *Pages) identity(ctx context.Context) (*oauth2.Config, *oidc.IDTokenVerifier, error) {
	ctx = oidc.ClientContext(ctx, p.http())
	prov, err := oidc.NewProvider(ctx, p.Identity.Issuer)
	if err != nil {
		return nil, nil, err
	}
	cfg := &oauth2.Config{ClientID: p.Identity.ClientID, ClientSecret: p.Identity.ClientSecret, Endpoint: prov.Endpoint(),
		RedirectURL: p.PublicURL + CallbackPath, Scopes: []string{oidc.ScopeOpenID}}
	return cfg, prov.Verifier(&oidc.Config{ClientID: p.Identity.ClientID}), nil
}

// callback takes an answer: of the identity provider (who opened the link) or of the
// server's authorization server (the user's grant).
func (p *Pages) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	data, ok, err := p.pending().Take(ctx, "flow:"+q.Get("state")) // a state is good once
	var f flow
	if err != nil || !ok || json.Unmarshal(data, &f) != nil {
		page(w, http.StatusBadRequest, "This sign-in is not one toolsift is waiting for (expired, or already finished). Call the tool again for a new link.")
		return
	}
	if len(f.OAuth) == 0 {
		p.identified(w, r, f)
		return
	}
	name := f.Server
	next, err := oauth.RestoreFlow(f.OAuth, func(name string) (config.Server, bool) { s, ok := p.Servers[name]; return s, ok })
	var g *oauth.Grant
	if err == nil {
		g, err = p.Tokens.Finish(ctx, next, q)
	}
	if err == nil {
		err = p.Tokens.Store.Save(ctx, oauth.UserKey(f.User, next.Server().URL), g)
	}
	if err != nil {
		p.log().Warn("sign-in failed", "upstream", name, "error", err)
		page(w, http.StatusBadGateway, "The sign-in to "+name+" did not go through. Call the tool again for a new link.")
		return
	}
	p.spend(ctx, f.Link, link{User: f.User, Server: f.Server})
	p.log().Info("signed in", "upstream", name)
	if p.SignedIn != nil {
		p.SignedIn(f.User, name, f.Link)
	}
	page(w, http.StatusOK, "Signed in to "+name+". You can close this tab and go back to your client.")
}

// identified checks who the identity provider says opened the link: the user it was made
// for, or nobody is signed in; then sends the browser on to the server's sign-in.
func (p *Pages) identified(w http.ResponseWriter, r *http.Request, f flow) {
	ctx := r.Context()
	cfg, verifier, err := p.identity(ctx)
	if err != nil {
		page(w, http.StatusBadGateway, "The identity provider cannot be reached; try again in a minute.")
		return
	}
	if e := r.URL.Query().Get("error"); e != "" {
		page(w, http.StatusForbidden, "The identity provider did not sign you in. Call the tool again for a new link.")
		return
	}
	tok, err := cfg.Exchange(oidc.ClientContext(ctx, p.http()), r.URL.Query().Get("code"), oauth2.VerifierOption(f.Verifier))
	var user string
	if err == nil {
		raw, _ := tok.Extra("id_token").(string)
		var id *oidc.IDToken
		if id, err = verifier.Verify(ctx, raw); err == nil && id.Nonce != f.Nonce {
			err = errors.New("the ID token's nonce is not this sign-in's")
		} else if err == nil {
			user = id.Issuer + " " + id.Subject
		}
	}
	if err != nil {
		p.log().Warn("sign-in: who opened the link is not known", "error", err)
		page(w, http.StatusForbidden, "toolsift could not learn who you are from the identity provider. Call the tool again for a new link.")
		return
	}
	l := link{User: f.User, Server: f.Server}
	if _, ok, _ := p.pending().Get(ctx, "link:"+f.Link); !ok {
		page(w, http.StatusNotFound, "This sign-in link has expired or was used. Call the tool again for a new one.")
		return
	}
	if user != f.User {
		// The link was made for someone else: whoever sent it wanted this browser's user
		// to sign in to the server on their behalf. Nothing is kept, and the link is spent.
		p.spend(ctx, f.Link, l)
		p.log().Warn("sign-in link opened by another user than it was made for: refused", "upstream", f.Server)
		page(w, http.StatusForbidden, "This sign-in link was made for another person. Nothing was signed in. If you did not expect it, tell whoever sent it to you to your administrator.")
		return
	}
	srv, ok := p.Servers[f.Server]
	if !ok {
		page(w, http.StatusNotFound, "This server is no longer configured.")
		return
	}
	// Asked: a link is made for a call the server refused.
	next, err := p.Tokens.Begin(ctx, srv, p.ConfigFile, nil, p.PublicURL+CallbackPath, true)
	if err != nil {
		p.log().Warn("sign-in: the server's sign-in cannot begin", "upstream", f.Server, "error", err)
		page(w, http.StatusBadGateway, "The sign-in to "+f.Server+" cannot begin now; try again later.")
		return
	}
	f.OAuth, _ = json.Marshal(next)
	f.Verifier, f.Nonce = "", ""
	if !p.putFlow(ctx, w, next.State, f) {
		return
	}
	http.Redirect(w, r, next.URL, http.StatusFound)
}

// page writes a page of one line.
func page(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html><title>toolsift</title><p>%s</p>\n", html.EscapeString(msg))
}

// random is 32 random bytes, base64url.
func random() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// maxPending bounds the sign-ins under way kept in memory: each is made by a signed-in
// user's call, and none must grow without bound.
const maxPending = 10000

// memory is Pending in this process's memory.
type memory struct {
	mu sync.Mutex // guards m
	m  map[string]entry
}

type entry struct {
	value   []byte
	expires time.Time
}

func (m *memory) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, e := range m.m {
		if now.After(e.expires) {
			delete(m.m, k)
		}
	}
	if len(m.m) >= maxPending {
		return ErrTooMany
	}
	m.m[key] = entry{value: value, expires: now.Add(ttl)}
	return nil
}

func (m *memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[key]
	if !ok || time.Now().After(e.expires) {
		return nil, false, nil
	}
	return e.value, true, nil
}

func (m *memory) Take(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := m.Get(ctx, key)
	m.mu.Lock()
	delete(m.m, key)
	m.mu.Unlock()
	return v, ok, err
}

func (m *memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, key)
	return nil
}
