package gate

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/toolsift/toolsift/internal/identity"
)

// Who is calling: the bearer token of the config or a named token, or the identity
// provider's access token (oidc.go); which sessions are theirs; and who may scrape /metrics.

// admit checks who the request comes from and that the session it names, if any, is one
// they opened; it returns the user, their credential and the session's ID.
func (g *gate) admit(w http.ResponseWriter, r *http.Request) (user identity.User, cred [32]byte, id string, ok bool) {
	user, cred, ok = g.authenticate(r)
	if !ok {
		if g.oidc != nil {
			w.Header().Set("WWW-Authenticate", g.oidc.challenge(bearer(r) != ""))
			refuse(w, "Unauthorized: sign in (the resource metadata says where), or send a named token as Authorization: Bearer <token>", http.StatusUnauthorized)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
			refuse(w, "Unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
		}
		return user, cred, "", false
	}
	if id, ok = sessionOf(r); !ok {
		refuse(w, "Bad Request: the request names more than one session (Mcp-Session-Id and sessionId differ); send one", http.StatusBadRequest)
		return user, cred, "", false
	}
	if id != "" && g.authRequired() && !g.owns(r.Context(), id, cred) {
		// A session belongs to whoever opened it: its ID travels in headers and URLs and
		// must not let anyone else in. To them it does not exist.
		refuse(w, "Not Found: no such session", http.StatusNotFound)
		return user, cred, "", false
	}
	return user, cred, id, true
}

// owns reports whether cred opened session id: as seen here, or, for a session another
// replica opened, as the shared state says. A session of the shared state without an owner
// there is no one's.
func (g *gate) owns(ctx context.Context, id string, cred [32]byte) bool {
	allowed, seen := g.owners.allows(id, cred)
	if seen || g.opts.Shared == nil {
		return allowed
	}
	owner, ok, err := g.opts.Shared.Owner(ctx, id)
	if err != nil || !ok {
		return false
	}
	return subtle.ConstantTimeCompare(owner[:], cred[:]) == 1
}

// metrics serves /metrics, to those who pass authentication unless it is public.
func (g *gate) metrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		refuse(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if _, _, ok := g.authenticate(r); !ok && !g.opts.MetricsPublic {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
		refuse(w, "Unauthorized: send Authorization: Bearer <token> (or set metrics.public)", http.StatusUnauthorized)
		return
	}
	g.opts.Metrics.ServeHTTP(w, r)
}

// byDigest is who a token of the configuration, or a named one still valid, stands for,
// found by its SHA-256.
func (g *gate) byDigest(sum [32]byte) (identity.User, bool) {
	match := 0
	for _, t := range g.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	if match == 1 {
		return identity.User{Kind: identity.Shared}, true
	}
	if g.opts.Named != nil {
		if name, ok := g.opts.Named.VerifyDigest(sum); ok {
			return identity.User{Kind: identity.Machine, Name: name, Key: "token " + name}, true
		}
	}
	return identity.User{}, false
}

// bearer is the request's bearer token; "" without one.
func bearer(r *http.Request) string {
	// RFC 9110 §11.1: the scheme is case-insensitive.
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authRequired reports whether a request must prove who it is: a token is configured or
// named, or an identity provider is.
func (g *gate) authRequired() bool {
	return len(g.tokens) > 0 || g.opts.Named != nil && g.opts.Named.InUse() || g.oidc != nil
}

// authenticate returns who r comes from, and the credential its sessions are bound to: the
// token's SHA-256 for a token of the config or a named one, the user's for a person (whose
// access token changes as it is refreshed). ok is false when r must prove who it is and
// does not.
func (g *gate) authenticate(r *http.Request) (u identity.User, cred [32]byte, ok bool) {
	if !g.authRequired() {
		return u, cred, true
	}
	tok := bearer(r)
	if tok == "" {
		return u, cred, false
	}
	sum := sha256.Sum256([]byte(tok))
	if u, ok := g.byDigest(sum); ok {
		return u, sum, true
	}
	if g.oidc != nil && strings.Count(tok, ".") == 2 {
		u, err := g.oidc.verify(r.Context(), tok)
		if err != nil {
			g.opts.Logger.Debug("access token refused", "error", err)
			return identity.User{}, cred, false
		}
		return u, u.Digest(), true
	}
	return u, cred, false
}
