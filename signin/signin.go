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
	"encoding/base64"
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

// maxPending bounds the links and flows under way, per user and in all: each is made by a
// signed-in user's call, and none must grow without bound.
const (
	maxPerUser = 20
	maxPending = 10000
)

// Identity is toolsift's client at the team's identity provider, with which the pages
// learn who opened a link.
type Identity struct {
	Issuer, ClientID, ClientSecret string
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

	mu    sync.Mutex       // guards links and flows
	links map[string]*link // by ID
	flows map[string]*flow // by state
}

// link is a sign-in link: made for one user and one server.
type link struct {
	id, user string // user is identity.User's Key
	server   config.Server
	made     time.Time
}

// flow is one step of a link's flow under way: identifying who opened it (oauth nil), or
// the server's authorization (oauth set, the user identified).
type flow struct {
	link            *link
	verifier, nonce string // of the identity step
	oauth           *oauth.Flow
	made            time.Time
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

// ErrTooMany means a user has too many sign-ins under way.
var ErrTooMany = errors.New("too many sign-ins under way: finish or wait out one")

// Link returns a sign-in link for u to sign in to server, and its ID. The link is worth
// nothing to anyone else: the page asks the identity provider who opened it.
func (p *Pages) Link(u identity.User, server string) (url, id string, err error) {
	srv, ok := p.Servers[server]
	if !ok {
		return "", "", fmt.Errorf("no server %q", server)
	}
	if u.Kind != identity.Person {
		return "", "", errors.New("only a person signs in: a token acts as no one")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(time.Now())
	mine := 0
	for _, l := range p.links {
		if l.user == u.Key {
			if l.server.Name == server {
				return p.PublicURL + ConnectPath + l.id, l.id, nil // the one sent before
			}
			mine++
		}
	}
	if mine >= maxPerUser || len(p.links)+len(p.flows) >= maxPending {
		return "", "", ErrTooMany
	}
	if p.links == nil {
		p.links, p.flows = map[string]*link{}, map[string]*flow{}
	}
	l := &link{id: random(), user: u.Key, server: srv, made: time.Now()}
	p.links[l.id] = l
	return p.PublicURL + ConnectPath + l.id, l.id, nil
}

// expireLocked forgets the links and flows older than linkTTL. p.mu must be held.
func (p *Pages) expireLocked(now time.Time) {
	for id, l := range p.links {
		if now.Sub(l.made) > linkTTL {
			delete(p.links, id)
		}
	}
	for st, f := range p.flows {
		if now.Sub(f.made) > linkTTL {
			delete(p.flows, st)
		}
	}
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
	p.mu.Lock()
	p.expireLocked(time.Now())
	l, ok := p.links[id]
	p.mu.Unlock()
	if !ok {
		page(w, http.StatusNotFound, "This sign-in link has expired or was used. Call the tool again for a new one.")
		return
	}
	cfg, _, err := p.identity(r.Context())
	if err != nil {
		p.log().Error("sign-in: the identity provider is not reachable", "error", err)
		page(w, http.StatusBadGateway, "The identity provider cannot be reached; try again in a minute.")
		return
	}
	f := &flow{link: l, verifier: oauth2.GenerateVerifier(), nonce: random(), made: time.Now()}
	state := random()
	p.mu.Lock()
	p.flows[state] = f
	p.mu.Unlock()
	http.Redirect(w, r, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(f.verifier), oidc.Nonce(f.nonce)), http.StatusFound)
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
	q := r.URL.Query()
	p.mu.Lock()
	f, ok := p.flows[q.Get("state")]
	delete(p.flows, q.Get("state")) // a state is good once
	p.mu.Unlock()
	if !ok || time.Since(f.made) > linkTTL {
		page(w, http.StatusBadRequest, "This sign-in is not one toolsift is waiting for (expired, or already finished). Call the tool again for a new link.")
		return
	}
	if f.oauth == nil {
		p.identified(w, r, f)
		return
	}
	name := f.link.server.Name
	g, err := p.Tokens.Finish(r.Context(), f.oauth, q)
	if err == nil {
		err = p.Tokens.Store.Save(r.Context(), oauth.UserKey(f.link.user, f.link.server.URL), g)
	}
	if err != nil {
		p.log().Warn("sign-in failed", "upstream", name, "error", err)
		page(w, http.StatusBadGateway, "The sign-in to "+name+" did not go through. Call the tool again for a new link.")
		return
	}
	p.mu.Lock()
	delete(p.links, f.link.id)
	p.mu.Unlock()
	p.log().Info("signed in", "upstream", name)
	if p.SignedIn != nil {
		p.SignedIn(f.link.user, name, f.link.id)
	}
	page(w, http.StatusOK, "Signed in to "+name+". You can close this tab and go back to your client.")
}

// identified checks who the identity provider says opened the link: the user it was made
// for, or nobody is signed in; then sends the browser on to the server's sign-in.
func (p *Pages) identified(w http.ResponseWriter, r *http.Request, f *flow) {
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
	tok, err := cfg.Exchange(oidc.ClientContext(ctx, p.http()), r.URL.Query().Get("code"), oauth2.VerifierOption(f.verifier))
	var user string
	if err == nil {
		raw, _ := tok.Extra("id_token").(string)
		var id *oidc.IDToken
		if id, err = verifier.Verify(ctx, raw); err == nil && id.Nonce != f.nonce {
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
	if user != f.link.user {
		// The link was made for someone else: whoever sent it wanted this browser's user
		// to sign in to the server on their behalf. Nothing is kept, and the link is spent.
		p.mu.Lock()
		delete(p.links, f.link.id)
		p.mu.Unlock()
		p.log().Warn("sign-in link opened by another user than it was made for: refused", "upstream", f.link.server.Name)
		page(w, http.StatusForbidden, "This sign-in link was made for another person. Nothing was signed in. If you did not expect it, tell whoever sent it to you to your administrator.")
		return
	}
	// Asked: a link is made for a call the server refused.
	next, err := p.Tokens.Begin(ctx, f.link.server, p.ConfigFile, nil, p.PublicURL+CallbackPath, true)
	if err != nil {
		p.log().Warn("sign-in: the server's sign-in cannot begin", "upstream", f.link.server.Name, "error", err)
		page(w, http.StatusBadGateway, "The sign-in to "+f.link.server.Name+" cannot begin now; try again later.")
		return
	}
	p.mu.Lock()
	p.flows[next.State] = &flow{link: f.link, oauth: next, made: time.Now()}
	p.mu.Unlock()
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
