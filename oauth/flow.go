package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/toolsift/toolsift/config"
)

// Flow is one authorization code flow with PKCE (S256), state and the resource indicator:
// begun by Begin, which makes the authorization request, and finished by Finish with the
// answer the browser brought to the redirect URI. toolsift auth login runs one through a
// loopback callback; a shared service runs one per user through its public callback.
type Flow struct {
	// State is the flow's state: the answer must carry it.
	State string
	// URL is the authorization request, for the user's browser.
	URL string

	srv                          config.Server
	md                           *Metadata
	client                       Client
	registered                   bool
	verifier, scope, redirectURI string
}

// Begin discovers how srv signs in, registers toolsift with its authorization server where
// it must (reusing prev's registration, if any), and makes the authorization request, whose
// answer goes to redirectURI. It returns ErrNotAsked for a server that answered the probe
// without asking for a sign-in, unless prev wants more scopes of it or asked says the
// server asked for one already (a call it refused: some servers ask only from the first
// call on). configFile names the configuration in messages.
func (t *Tokens) Begin(ctx context.Context, srv config.Server, configFile string, prev *Grant, redirectURI string, asked bool) (*Flow, error) {
	hc := t.http()
	ch, probed, err := probe(ctx, hc, srv)
	if err != nil {
		return nil, err
	}
	if !probed && !asked && (prev == nil || len(prev.Wanted) == 0) {
		return nil, ErrNotAsked
	}
	md, err := Discover(ctx, hc, srv.URL, ch)
	if err != nil {
		return nil, fmt.Errorf("discovering how %s signs in: %w", srv.Name, err)
	}
	client, registered, err := register(ctx, hc, srv.Name, configFile, md, srv.OAuth, prev, redirectURI)
	if err != nil {
		return nil, err
	}
	f := &Flow{srv: srv, md: md, client: client, registered: registered, redirectURI: redirectURI,
		State: random(), verifier: random(), scope: chooseScope(srv.OAuth, ch.Scope, prev, md.ScopesSupported)}
	challenge := sha256.Sum256([]byte(f.verifier))
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {client.ID},
		"redirect_uri":          {redirectURI},
		"state":                 {f.State},
		"code_challenge":        {base64.RawURLEncoding.EncodeToString(challenge[:])},
		"code_challenge_method": {"S256"},
		"resource":              {md.Resource},
	}
	if f.scope != "" {
		q.Set("scope", f.scope)
	}
	f.URL = md.AuthorizationEndpoint
	if strings.Contains(f.URL, "?") {
		f.URL += "&" + q.Encode()
	} else {
		f.URL += "?" + q.Encode()
	}
	return f, nil
}

// Server is the server the flow signs in to.
func (f *Flow) Server() config.Server { return f.srv }

// code checks the answer's query, whose state the caller matched: it is from the
// authorization server asked (iss, RFC 9207), not an error, and holds a code.
func (f *Flow) code(q url.Values) (string, error) {
	name := f.srv.Name
	switch {
	case q.Has("iss") && q.Get("iss") != f.md.Issuer || !q.Has("iss") && f.md.AuthorizationResponseIssParameterSupported:
		return "", fmt.Errorf("the sign-in's answer is not from %q (iss mismatch, RFC 9207): nothing was saved; sign in to %s again", f.md.Issuer, name)
	case q.Get("error") != "":
		return "", fmt.Errorf("the authorization server declined the sign-in (%q)", q.Get("error"))
	case q.Get("code") == "":
		return "", errors.New("the sign-in's answer holds no code")
	}
	return q.Get("code"), nil
}

// Finish exchanges the answer's code for a grant, which it returns unsaved. q is the
// query the browser brought to the redirect URI, its state already matched to the flow's.
func (t *Tokens) Finish(ctx context.Context, f *Flow, q url.Values) (*Grant, error) {
	code, err := f.code(q)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {f.redirectURI},
		"code_verifier": {f.verifier},
		"resource":      {f.md.Resource},
	}
	md := f.md
	g := Grant{
		Server: f.srv.Name, URL: f.srv.URL, Resource: md.Resource,
		Issuer: md.Issuer, TokenEndpoint: md.TokenEndpoint, RevocationEndpoint: md.RevocationEndpoint,
		ClientID: f.client.ID, AuthMethod: f.client.AuthMethod, Registered: f.registered, RedirectURI: f.redirectURI,
		Scope: f.scope,
	}
	if f.registered {
		g.ClientSecret = f.client.Secret
	}
	got, err := tokenRequest(ctx, t.http(), md.TokenEndpoint, f.client, form, g, t.now())
	if err != nil {
		return nil, fmt.Errorf("signing in to %s: %w", f.srv.Name, err)
	}
	return got, nil
}

// flowJSON is a Flow as MarshalJSON writes it: all but the server's configuration, which
// holds its secrets, and of which only the name is kept (see Server and Restore).
type flowJSON struct {
	State, URL                   string
	Server                       string
	Metadata                     *Metadata
	Client                       Client
	Registered                   bool
	Verifier, Scope, RedirectURI string
}

// MarshalJSON writes the flow for a replica that will finish it (a shared service keeps its
// sign-ins under way in Redis, sealed): its verifier and client secret are in it.
func (f *Flow) MarshalJSON() ([]byte, error) {
	return json.Marshal(flowJSON{State: f.State, URL: f.URL, Server: f.srv.Name, Metadata: f.md, Client: f.client,
		Registered: f.registered, Verifier: f.verifier, Scope: f.scope, RedirectURI: f.redirectURI})
}

// RestoreFlow reads a flow MarshalJSON wrote, for the server of that name, as configured:
// srv(name) returns its configuration.
func RestoreFlow(data []byte, srv func(name string) (config.Server, bool)) (*Flow, error) {
	var j flowJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, err
	}
	s, ok := srv(j.Server)
	if !ok || j.Metadata == nil {
		return nil, fmt.Errorf("no server %q to finish signing in to", j.Server)
	}
	return &Flow{State: j.State, URL: j.URL, srv: s, md: j.Metadata, client: j.Client, registered: j.Registered,
		verifier: j.Verifier, scope: j.Scope, redirectURI: j.RedirectURI}, nil
}
