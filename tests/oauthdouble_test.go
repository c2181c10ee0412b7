package tests

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// authDouble is an OAuth authorization server and an MCP server it protects, over real
// HTTP on loopback, with the quirks of the providers users connect to: what it offers and
// demands is set by its fields before start.
type authDouble struct {
	t *testing.T
	// dcr offers dynamic registration; pathPRM serves the protected resource metadata at
	// the path-specific well-known URL (Atlassian's returned 404 there).
	dcr, pathPRM bool
	// authMethods are token_endpoint_auth_methods_supported; secrets are the pre-registered
	// clients' secrets by client ID, demanded at the token endpoint even with PKCE.
	authMethods []string
	secrets     map[string]string
	// ttl is an access token's lifetime; issuer, if set, is what the metadata claims.
	ttl    time.Duration
	issuer string
	// noPKCE leaves S256 out of the metadata.
	noPKCE bool
	// authEndpoint, if set, is the authorization endpoint the metadata names (a hostile
	// one); expiresIn, if set, the expires_in of every token answer.
	authEndpoint string
	expiresIn    any

	as, rs *httptest.Server

	mu       sync.Mutex // guards the fields below
	codes    map[string]authCode
	access   map[string]time.Time // token -> expiry
	refresh  map[string]bool      // refresh token -> still good
	clients  map[string]string    // dynamically registered: client ID -> auth method
	requests []tokenRequest
	issued   []string // every token handed out
	bearers  []string // every bearer token the resource server was sent
	// redirect, if set, is where the resource server sends every MCP request (307).
	redirect string
	// holding, if set, is closed when the first refresh request arrives; that request
	// is then held, never answered, until its client goes away (is killed).
	holding chan struct{}
}

type authCode struct {
	challenge, clientID, redirect, resource, scope string
}

type tokenRequest struct {
	grant, resource, clientID, auth string
	ok                              bool
}

func newAuthDouble(t *testing.T) *authDouble {
	return &authDouble{t: t, dcr: true, ttl: time.Hour, secrets: map[string]string{},
		codes: map[string]authCode{}, access: map[string]time.Time{}, refresh: map[string]bool{}, clients: map[string]string{}}
}

func randomHex() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (d *authDouble) start() *authDouble {
	d.as = httptest.NewServer(http.HandlerFunc(d.serveAS))
	d.t.Cleanup(d.as.Close)
	mcpSrv := server.NewMCPServer("protected", "1", server.WithToolCapabilities(true))
	mcpSrv.AddTool(mcp.Tool{Name: "whoami", Description: "Says who the caller is signed in as.", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("signed in"), nil
		})
	h := server.NewStreamableHTTPServer(mcpSrv)
	d.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prm := func() {
			json.NewEncoder(w).Encode(map[string]any{"resource": d.rs.URL + "/mcp", "authorization_servers": []string{d.as.URL}})
		}
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			if d.pathPRM {
				prm()
			} else {
				http.NotFound(w, r)
			}
			return
		case "/.well-known/oauth-protected-resource":
			prm()
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		d.mu.Lock()
		exp, ok := d.access[tok]
		if tok != "" {
			d.bearers = append(d.bearers, tok)
		}
		redirect := d.redirect
		d.mu.Unlock()
		if redirect != "" {
			http.Redirect(w, r, redirect, http.StatusTemporaryRedirect)
			return
		}
		if !ok || time.Now().After(exp) {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`) // no resource_metadata, as Atlassian's
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	d.t.Cleanup(d.rs.Close)
	return d
}

func (d *authDouble) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		md := map[string]any{
			"issuer":                           d.as.URL,
			"authorization_endpoint":           d.as.URL + "/authorize",
			"token_endpoint":                   d.as.URL + "/token",
			"revocation_endpoint":              d.as.URL + "/revoke",
			"code_challenge_methods_supported": []string{"S256"},
		}
		if d.issuer != "" {
			md["issuer"] = d.issuer
		}
		if d.authEndpoint != "" {
			md["authorization_endpoint"] = d.authEndpoint
		}
		if d.noPKCE {
			md["code_challenge_methods_supported"] = []string{"plain"}
		}
		if d.dcr {
			md["registration_endpoint"] = d.as.URL + "/register"
		}
		if d.authMethods != nil {
			md["token_endpoint_auth_methods_supported"] = d.authMethods
		}
		json.NewEncoder(w).Encode(md)
	case "/register":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		grants, _ := req["grant_types"].([]any)
		if !slices.Contains(grants, any("refresh_token")) {
			http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
			return
		}
		id := "dyn-" + randomHex()
		d.mu.Lock()
		d.clients[id] = "none"
		d.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") == "" {
			http.Error(w, "PKCE S256 and resource are required", http.StatusBadRequest)
			return
		}
		code := randomHex()
		d.mu.Lock()
		d.codes[code] = authCode{q.Get("code_challenge"), q.Get("client_id"), q.Get("redirect_uri"), q.Get("resource"), q.Get("scope")}
		d.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		bq.Set("iss", d.as.URL)
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		d.token(w, r)
	case "/revoke":
		r.ParseForm()
		d.mu.Lock()
		delete(d.refresh, r.PostForm.Get("token"))
		delete(d.access, r.PostForm.Get("token"))
		d.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

func (d *authDouble) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f := r.PostForm
	req := tokenRequest{grant: f.Get("grant_type"), resource: f.Get("resource"), clientID: f.Get("client_id")}
	id, secret, basic := r.BasicAuth()
	switch {
	case basic:
		req.auth, req.clientID = "basic", id
	case f.Get("client_secret") != "":
		req.auth, secret = "post", f.Get("client_secret")
	default:
		req.auth = "none"
	}
	fail := func(code string) {
		d.mu.Lock()
		d.requests = append(d.requests, req)
		d.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q,"error_description":"the request echoed: %s"}`, code, f.Encode())
	}
	if want, ok := d.secrets[req.clientID]; ok {
		if secret != want || (d.authMethods != nil && !slices.Contains(d.authMethods, "client_secret_"+req.auth)) {
			fail("invalid_client")
			return
		}
	}
	if req.resource != d.rs.URL+"/mcp" {
		fail("invalid_target")
		return
	}
	d.mu.Lock()
	switch req.grant {
	case "authorization_code":
		c, ok := d.codes[f.Get("code")]
		delete(d.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || c.redirect != f.Get("redirect_uri") || c.clientID != req.clientID {
			d.mu.Unlock()
			fail("invalid_grant")
			return
		}
	case "refresh_token":
		if d.holding != nil {
			held := d.holding
			d.holding = nil
			d.mu.Unlock()
			close(held)
			<-r.Context().Done()
			return
		}
		if !d.refresh[f.Get("refresh_token")] {
			d.mu.Unlock()
			fail("invalid_grant")
			return
		}
		delete(d.refresh, f.Get("refresh_token")) // rotated
	default:
		d.mu.Unlock()
		fail("unsupported_grant_type")
		return
	}
	access, refresh := "at-"+randomHex(), "rt-"+randomHex()
	d.access[access] = time.Now().Add(d.ttl)
	d.refresh[refresh] = true
	d.issued = append(d.issued, access, refresh)
	req.ok = true
	d.requests = append(d.requests, req)
	d.mu.Unlock()
	var expiresIn any = int(d.ttl / time.Second)
	if d.expiresIn != nil {
		expiresIn = d.expiresIn
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": expiresIn, "refresh_token": refresh})
}

// revokeAll makes every refresh token the double issued worthless, as a user who revoked
// the app would.
func (d *authDouble) revokeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.refresh)
}

func (d *authDouble) tokenRequests() []tokenRequest {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.requests)
}

// bearersSeen lists every bearer token the resource server was sent, good or not.
func (d *authDouble) bearersSeen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.bearers)
}

// redirectTo makes the resource server send every MCP request to u.
func (d *authDouble) redirectTo(u string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.redirect = u
}

// secretsIssued lists every token the double handed out, to look for in logs.
func (d *authDouble) secretsIssued() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.issued)
}
