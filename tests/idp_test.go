package tests

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// idp is an OpenID provider double over real HTTP on loopback: discovery, a JWKS whose keys
// rotate, dynamic registration, the authorization code flow with PKCE (signing in whoever
// login_hint names, or user), refresh tokens that rotate and can be revoked per user, and
// JWT access tokens whose aud is the resource the client asked for (RFC 8707).
type idp struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex // guards the fields below
	keys    []*rsa.PrivateKey
	kids    []string
	user    string              // signed in by /authorize without a login_hint
	groups  map[string][]string // user -> groups claim
	codes   map[string]idpCode
	refresh map[string]idpGrant // refresh token -> grant
	fetches int                 // of the JWKS
	ttl     time.Duration
	issued  []string // every access and refresh token the token endpoint gave out
}

type idpCode struct{ challenge, redirect, resource, user, clientID, nonce, scope string }
type idpGrant struct{ user, resource, clientID string }

func newIDP(t *testing.T) *idp {
	d := &idp{t: t, user: "ann", groups: map[string][]string{}, codes: map[string]idpCode{}, refresh: map[string]idpGrant{}, ttl: time.Hour}
	d.rotate()
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *idp) issuer() string { return d.srv.URL }

// rotate puts a new signing key first and drops all but the previous one.
func (d *idp) rotate() {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys = append([]*rsa.PrivateKey{k}, d.keys[:min(len(d.keys), 1)]...)
	d.kids = append([]string{"k" + randomHex()[:6]}, d.kids[:min(len(d.kids), 1)]...)
}

// dropOld leaves only the newest key in the set.
func (d *idp) dropOld() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keys, d.kids = d.keys[:1], d.kids[:1]
}

func (d *idp) jwksFetches() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fetches
}

// claims are the claims of a good access token of user for aud, valid for the next hour.
func (d *idp) claims(user, aud string) map[string]any {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	c := map[string]any{"iss": d.issuer(), "sub": "sub-" + user, "email": user + "@example.com", "aud": aud,
		"iat": now.Unix(), "nbf": now.Add(-time.Minute).Unix(), "exp": now.Add(d.ttl).Unix()}
	if g, ok := d.groups[user]; ok {
		c["groups"] = g
	}
	return c
}

// sign signs claims with the newest key.
func (d *idp) sign(claims map[string]any) string {
	d.mu.Lock()
	k, kid := d.keys[0], d.kids[0]
	d.mu.Unlock()
	return signJWT(d.t, jose.RS256, k, kid, claims)
}

// token is a good access token of user for aud.
func (d *idp) token(user, aud string) string { return d.sign(d.claims(user, aud)) }

func signJWT(t *testing.T, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// unsigned is claims as a JWT with alg none.
func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none", "typ": "JWT"})
	c, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "."
}

// publicKeyBytes is the newest public key as an HMAC key would be made of it: its PKIX DER,
// which anyone can fetch.
func (d *idp) publicKeyBytes() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	der, _ := x509.MarshalPKIXPublicKey(&d.keys[0].PublicKey)
	return der
}

// revoke makes every refresh token of user worthless.
func (d *idp) revoke(user string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for rt, g := range d.refresh {
		if g.user == user {
			delete(d.refresh, rt)
		}
	}
}

func (d *idp) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/.well-known/openid-configuration", "/.well-known/oauth-authorization-server":
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": d.issuer(), "jwks_uri": d.issuer() + "/jwks",
			"authorization_endpoint": d.issuer() + "/authorize", "token_endpoint": d.issuer() + "/token",
			"registration_endpoint":                 d.issuer() + "/register",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
			"subject_types_supported":               []string{"public"},
		})
	case "/jwks":
		d.mu.Lock()
		d.fetches++
		var set jose.JSONWebKeySet
		for i, k := range d.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: d.kids[i], Algorithm: "RS256", Use: "sig"})
		}
		d.mu.Unlock()
		json.NewEncoder(w).Encode(set)
	case "/register":
		var req map[string]any
		json.NewDecoder(r.Body).Decode(&req)
		req["client_id"] = "dyn-" + randomHex()
		req["token_endpoint_auth_method"] = "none"
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(req)
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("redirect_uri") == "" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		code := randomHex()
		d.mu.Lock()
		user := d.user
		if h := q.Get("login_hint"); h != "" {
			user = h
		}
		d.codes[code] = idpCode{q.Get("code_challenge"), q.Get("redirect_uri"), q.Get("resource"), user, q.Get("client_id"), q.Get("nonce"), q.Get("scope")}
		d.mu.Unlock()
		back, _ := url.Parse(q.Get("redirect_uri"))
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	case "/token":
		d.tokenEndpoint(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (d *idp) tokenEndpoint(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	f := r.PostForm
	fail := func(code string) {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": code})
	}
	d.mu.Lock()
	var g idpGrant
	var idToken map[string]any // for an OpenID sign-in
	switch f.Get("grant_type") {
	case "authorization_code":
		c, ok := d.codes[f.Get("code")]
		delete(d.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge || c.redirect != f.Get("redirect_uri") {
			d.mu.Unlock()
			fail("invalid_grant")
			return
		}
		g = idpGrant{user: c.user, resource: strings.TrimSpace(c.resource), clientID: c.clientID}
		if slices.Contains(strings.Fields(c.scope), "openid") {
			now := time.Now()
			idToken = map[string]any{"iss": d.issuer(), "sub": "sub-" + c.user, "aud": c.clientID, "nonce": c.nonce,
				"iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		}
	case "refresh_token":
		var ok bool
		g, ok = d.refresh[f.Get("refresh_token")]
		delete(d.refresh, f.Get("refresh_token")) // rotated
		if !ok {
			d.mu.Unlock()
			fail("invalid_grant")
			return
		}
	default:
		d.mu.Unlock()
		fail("unsupported_grant_type")
		return
	}
	rt := "rt-" + randomHex()
	d.refresh[rt] = g
	ttl := d.ttl
	d.mu.Unlock()
	access := d.token(g.user, g.resource)
	d.mu.Lock()
	d.issued = append(d.issued, access, rt)
	d.mu.Unlock()
	answer := map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int(ttl / time.Second), "refresh_token": rt}
	if idToken != nil {
		answer["id_token"] = d.sign(idToken)
	}
	json.NewEncoder(w).Encode(answer)
}

// issuedTokens lists every access and refresh token the token endpoint gave out.
func (d *idp) issuedTokens() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.issued)
}
