package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"

	"github.com/toolsift/toolsift/internal/identity"
)

// OIDC makes the service an OAuth 2.1 protected resource (the MCP authorization spec): it
// names the team's authorization server in its resource metadata, and accepts the JWT
// access tokens that server issues for it.
type OIDC struct {
	// Issuer is the authorization server's issuer URL; its discovery document names the
	// keys (JWKS) tokens are signed with.
	Issuer string
	// Resource is the URL clients reach MCP at (the public URL and /mcp): the resource
	// the metadata describes, and the audience tokens must name unless Audience is set.
	Resource string
	// Audience is the aud a token must carry; empty means Resource.
	Audience string
	// UserClaim names the claim that names the user; empty means "sub".
	UserClaim string
	// GroupsClaim names the claim that lists the user's groups; empty means none.
	GroupsClaim string
	// Scopes are the scopes a client should ask for, announced in the metadata and in 401s.
	Scopes []string
	// Algorithms are the signing algorithms accepted; empty means RS256, PS256, ES256
	// and EdDSA. Never "none", never an HMAC (whose key would be public).
	Algorithms []string
	// HTTP fetches discovery and keys; nil means a client with a 10s timeout.
	HTTP *http.Client
	// Now is the clock tokens are checked against; nil means time.Now.
	Now func() time.Time
}

// MetadataPath is where the resource metadata is served, by RFC 9728's rule for a
// resource at /mcp; the bare well-known path serves it too, for clients that look there.
const MetadataPath = "/.well-known/oauth-protected-resource/mcp"

// retryDiscovery is how long a failed discovery is not tried again: a request without a
// valid key set must not make a request to the identity provider each time.
const retryDiscovery = 10 * time.Second

// verifier checks access tokens against the issuer's keys, discovered on first use (the
// service starts while the identity provider is down, and refuses tokens until it is up),
// and kept by keySet.
type verifier struct {
	cfg OIDC

	mu     sync.Mutex // guards v and failed
	v      *oidc.IDTokenVerifier
	failed time.Time // when discovery last failed
}

func newVerifier(cfg OIDC) *verifier {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.Resource
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = []string{oidc.RS256, oidc.PS256, oidc.ES256, oidc.EdDSA}
	}
	return &verifier{cfg: cfg}
}

var errNoKeys = errors.New("the identity provider's keys are not known yet")

// get returns the token verifier, discovering the issuer's keys on first use.
func (v *verifier) get() (*oidc.IDTokenVerifier, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.v != nil {
		return v.v, nil
	}
	if !v.failed.IsZero() && v.cfg.Now().Sub(v.failed) < retryDiscovery {
		return nil, errNoKeys
	}
	// The key set keeps this context for the fetches it makes later: not a request's.
	ctx := oidc.ClientContext(context.Background(), v.cfg.HTTP)
	p, err := oidc.NewProvider(ctx, v.cfg.Issuer)
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	if err == nil {
		err = p.Claims(&doc)
	}
	if err == nil && doc.JWKS == "" {
		err = errors.New("its discovery document names no jwks_uri")
	}
	if err != nil {
		v.failed = v.cfg.Now()
		return nil, fmt.Errorf("discovering %s: %w", v.cfg.Issuer, err)
	}
	keys := &keySet{url: doc.JWKS, http: v.cfg.HTTP, now: v.cfg.Now}
	for _, alg := range v.cfg.Algorithms {
		keys.algs = append(keys.algs, jose.SignatureAlgorithm(alg))
	}
	v.v = oidc.NewVerifier(v.cfg.Issuer, keys, &oidc.Config{ClientID: v.cfg.Audience, SupportedSigningAlgs: v.cfg.Algorithms, Now: v.cfg.Now})
	return v.v, nil
}

// verify checks raw, a JWT access token: its signature by one of the issuer's keys with an
// allowed algorithm, its iss, aud, exp and nbf; and returns who it names.
func (v *verifier) verify(ctx context.Context, raw string) (identity.User, error) {
	tv, err := v.get()
	if err != nil {
		return identity.User{}, err
	}
	tok, err := tv.Verify(ctx, raw)
	if err != nil {
		return identity.User{}, err
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return identity.User{}, err
	}
	name, _ := claims[v.cfg.UserClaim].(string)
	if tok.Subject == "" {
		return identity.User{}, errors.New("the token has no sub claim")
	}
	if name == "" {
		return identity.User{}, fmt.Errorf("the token has no %s claim", v.cfg.UserClaim)
	}
	u := identity.User{Kind: identity.Person, Name: name, Key: tok.Issuer + " " + tok.Subject}
	if v.cfg.GroupsClaim != "" {
		switch g := claims[v.cfg.GroupsClaim].(type) {
		case string:
			u.Groups = []string{g}
		case []any:
			for _, each := range g {
				if s, ok := each.(string); ok {
					u.Groups = append(u.Groups, s)
				}
			}
		}
	}
	return u, nil
}

// challenge is the WWW-Authenticate of a 401: where the resource metadata is, the scopes to
// ask for, and, for a token that was sent and refused, that it was invalid. Never why: that
// would tell whoever forged it what to change.
func (v *verifier) challenge(presented bool) string {
	h := fmt.Sprintf(`Bearer resource_metadata=%q`, metadataURL(v.cfg.Resource))
	if len(v.cfg.Scopes) > 0 {
		h += fmt.Sprintf(`, scope=%q`, strings.Join(v.cfg.Scopes, " "))
	}
	if presented {
		h += `, error="invalid_token"`
	}
	return h
}

// metadataURL is the URL of the metadata of resource, by RFC 9728: the well-known path
// inserted between the host and the resource's path.
func metadataURL(resource string) string {
	scheme, rest, _ := strings.Cut(resource, "://")
	host, path, _ := strings.Cut(rest, "/")
	return scheme + "://" + host + "/.well-known/oauth-protected-resource" + strings.TrimSuffix("/"+path, "/")
}

// metadata serves the resource metadata (RFC 9728).
func (v *verifier) metadata(w http.ResponseWriter, _ *http.Request) {
	md := map[string]any{
		"resource":                 v.cfg.Resource,
		"authorization_servers":    []string{v.cfg.Issuer},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "toolsift",
	}
	if len(v.cfg.Scopes) > 0 {
		md["scopes_supported"] = v.cfg.Scopes
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=3600")
	json.NewEncoder(w).Encode(md)
}
