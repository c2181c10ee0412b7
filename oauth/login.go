package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/terminal"
)

// Login is one sign-in to a server: the authorization code flow with PKCE (S256), state,
// and the resource indicator, through the user's browser and a callback on loopback.
type Login struct {
	Tokens *Tokens
	// Server is the server's configuration; ConfigFile names the file, for messages.
	Server     config.Server
	ConfigFile string
	// Open opens the sign-in page in a browser; nil leaves that to the user, who is shown
	// the address on Out in any case.
	Open func(url string) error
	Out  io.Writer
	// Timeout bounds the wait for the browser; 0 means 5 minutes.
	Timeout time.Duration
}

// ErrNotAsked means the server answered without asking for a sign-in.
var ErrNotAsked = errors.New("the server answered without asking for a sign-in")

// Run signs in and saves the grant.
func (l *Login) Run(ctx context.Context) (*Grant, error) {
	name := l.Server.Name
	prev, err := l.Tokens.Grant(ctx, name, l.Server.URL)
	if err != nil && !errors.Is(err, ErrNoGrant) {
		return nil, err
	}
	ln, redirectURI, err := l.listen()
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	f, err := l.Tokens.Begin(ctx, l.Server, l.ConfigFile, prev, redirectURI, false)
	if err != nil {
		return nil, err
	}
	q, err := l.await(ctx, ln, f)
	if err != nil {
		return nil, err
	}
	got, err := l.Tokens.Finish(ctx, f, q)
	if err != nil {
		return nil, err
	}
	if err := l.Tokens.Store.Save(ctx, Key(l.Server.URL), got); err != nil {
		return nil, fmt.Errorf("saving the sign-in of %s: %w", name, err)
	}
	return got, nil
}

// listen opens the callback's listener: on the configured redirect URI's loopback port, or
// on a free port of 127.0.0.1. Only loopback: the code must not be offered to the network.
func (l *Login) listen() (net.Listener, string, error) {
	if oc := l.Server.OAuth; oc != nil && oc.RedirectURI != "" {
		u, err := url.Parse(oc.RedirectURI)
		if err != nil {
			return nil, "", err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(u.Hostname(), u.Port()))
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, "", fmt.Errorf("port %s of mcpServers.%s.oauth.redirectUri is in use by another program: close it, or register another port with the app and change redirectUri to it", u.Port(), l.Server.Name)
		}
		if err != nil {
			return nil, "", fmt.Errorf("listening for the sign-in's answer at %s: %w", oc.RedirectURI, err)
		}
		return ln, oc.RedirectURI, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", fmt.Errorf("listening for the sign-in's answer: %w", err)
	}
	return ln, "http://" + ln.Addr().String() + "/callback", nil
}

// await shows the sign-in page and serves the callback until the authorization server
// sends the user back, or the time is up. A callback without this sign-in's state is
// answered 400 and ignored; one with it whose issuer is not this sign-in's fails closed,
// without the server's text.
func (l *Login) await(ctx context.Context, ln net.Listener, f *Flow) (url.Values, error) {
	redirectURI, authURL, state := f.redirectURI, f.URL, f.State
	timeout := l.Timeout
	if timeout == 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cb, _ := url.Parse(redirectURI)
	type answer struct {
		q   url.Values
		err error
	}
	answers := make(chan answer, 1)
	var stray atomic.Int64 // callbacks that were not this sign-in's (wrong or no state)
	name := l.Server.Name
	mux := http.NewServeMux()
	mux.HandleFunc(cb.Path, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			// Not this sign-in's answer: a page or program on this machine, or a stale
			// tab. It must not end the sign-in, or the real answer would find nobody.
			stray.Add(1)
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, "<!doctype html><title>toolsift</title><p>This is not the answer toolsift is waiting for.</p>\n")
			return
		}
		a := answer{q: q}
		_, a.err = f.code(q)
		page := "Signed in to " + name + ": you can close this tab and go back to toolsift."
		if a.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			page = "The sign-in to " + name + " did not go through: see toolsift's message."
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>toolsift</title><p>%s</p>\n", html.EscapeString(page))
		select {
		case answers <- a:
		default: // a second answer: the first one counts
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()
	// The address was checked (webURL) and is built from the remote's metadata: escaped,
	// it is shown as it is.
	fmt.Fprintf(l.Out, "Sign in to %s in your browser:\n  %s\n", name, terminal.Escape(authURL))
	if l.Open != nil {
		if err := l.Open(authURL); err != nil {
			fmt.Fprintf(l.Out, "Could not open a browser (%v): open the address above yourself.\n", err)
		}
	}
	fmt.Fprintf(l.Out, "Waiting for the sign-in (up to %v)…\n", timeout)
	select {
	case a := <-answers:
		if n := stray.Load(); n > 0 {
			fmt.Fprintf(l.Out, "Ignored %d answer(s) at the callback that did not belong to this sign-in (state mismatch).\n", n)
		}
		return a.q, a.err
	case <-ctx.Done():
		if n := stray.Load(); n > 0 {
			return nil, fmt.Errorf("no sign-in within %v; %d answer(s) at the callback did not belong to this sign-in (state mismatch) and were ignored, nothing was saved: run toolsift auth login %s again, and finish the sign-in in the browser", timeout, n, name)
		}
		return nil, fmt.Errorf("no sign-in within %v: run toolsift auth login %s again, and finish the sign-in in the browser", timeout, name)
	}
}

// chooseScope is the scope to ask for: the configured scopes, the challenge's, and, for a
// step-up, those granted before and those the server asked for since; else every scope the
// server lists; else none (the parameter is left out).
func chooseScope(oc *config.OAuth, challenged string, prev *Grant, supported []string) string {
	var out []string
	add := func(scopes ...string) {
		for _, s := range scopes {
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if oc != nil {
		add(oc.Scopes...)
	}
	add(strings.Fields(challenged)...)
	if prev != nil && len(prev.Wanted) > 0 {
		add(strings.Fields(prev.Scope)...)
		add(prev.Wanted...)
	}
	if len(out) == 0 {
		add(supported...)
	}
	return strings.Join(out, " ")
}

// random is 32 random bytes, base64url: a state, or a PKCE verifier (RFC 7636 §4.1).
func random() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// probe asks the server, without a token, what an MCP client asks first (initialize, then
// tools/list), and returns the Bearer challenge of the answer that refuses, if any. Some
// servers let initialize through and ask for a sign-in from the next request on.
func probe(ctx context.Context, hc *http.Client, srv config.Server) (Challenge, bool, error) {
	post := func(body, session string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		for k, v := range srv.Headers {
			req.Header.Set(k, v)
		}
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		return hc.Do(req)
	}
	refused := func(resp *http.Response) (Challenge, bool) {
		defer resp.Body.Close()
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		if resp.StatusCode != http.StatusUnauthorized {
			return Challenge{}, false
		}
		ch, _ := ParseChallenge(resp.Header)
		return ch, true
	}
	if srv.Type == config.TypeSSE {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return Challenge{}, false, err
		}
		req.Header.Set("Accept", "text/event-stream")
		for k, v := range srv.Headers {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return Challenge{}, false, fmt.Errorf("reaching %s: %w", srv.Name, err)
		}
		ch, ok := refused(resp)
		return ch, ok, nil
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolsift","version":"login"}}}`
	resp, err := post(init, "")
	if err != nil {
		return Challenge{}, false, fmt.Errorf("reaching %s: %w", srv.Name, err)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	if ch, ok := refused(resp); ok {
		return ch, true, nil
	}
	if resp, err := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, session); err == nil {
		refused(resp)
	}
	resp, err = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, session)
	if err != nil {
		return Challenge{}, false, fmt.Errorf("reaching %s: %w", srv.Name, err)
	}
	ch, ok := refused(resp)
	return ch, ok, nil
}

// Logout forgets the grant stored under key, revoking its tokens where the authorization
// server offers that; oc is the configuration of its server, if it still has one. It
// reports whether there was a grant.
func (t *Tokens) Logout(ctx context.Context, key string, oc *config.OAuth) (bool, error) {
	g, err := t.Store.Load(ctx, key)
	if errors.Is(err, ErrNoGrant) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c := (&Source{oc: oc}).client(g)
	hc := t.http()
	// Best effort: the sign-in is forgotten here whatever the server says.
	_ = revoke(ctx, hc, g, c, g.RefreshToken, "refresh_token")
	_ = revoke(ctx, hc, g, c, g.AccessToken, "access_token")
	return true, t.Store.Delete(ctx, key)
}
