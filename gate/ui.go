package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"net/http"
	"strings"

	"github.com/toolsift/toolsift/internal/identity"
)

// uiCookie carries, for a browser, the SHA-256 of the token a person gave the dashboard's
// sign-in form: a browser sends no Authorization header of its own. Not the token itself: a
// browser sends a host's cookies to each of its ports (RFC 6265 §8.5), so another server on
// the same host could collect it, and the digest opens the dashboard only, never /mcp.
// HttpOnly, SameSite=Strict, sent to /ui only, Secure over TLS.
const uiCookie = "toolsift_ui"

var uiLogin = template.Must(template.New("").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · toolsift</title></head>
<body><main><h1>toolsift</h1>
{{if .}}<p role="alert">{{.}}</p>{{end}}
<form method="post" action="/ui/login">
<label>Your toolsift token (Authorization: Bearer): <input type="password" name="token" autocomplete="off"></label>
<button>Open the dashboard</button>
</form>
<p>A named token (<code>toolsift token create NAME</code>, run by the service's operator) or one of
the configuration's <code>auth.tokens</code>; an identity provider's access token expires too soon to
keep, so it opens the dashboard only as the request's <code>Authorization</code> header.</p>
</main></body></html>
`))

// ui serves the dashboard to those who pass the service's authentication: with the
// Authorization header, or with the cookie its sign-in form sets. A request that changes
// something must come from the dashboard's own pages: another origin is refused, even a
// local one the MCP endpoints allow.
func (g *gate) ui(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if o := r.Header.Get("Origin"); o != "" && !uiSameOrigin(r, o) {
			refuse(w, "Forbidden: origin "+o+" is not the dashboard's", http.StatusForbidden)
			return
		}
	}
	if r.URL.Path == "/ui/login" {
		g.uiLogin(w, r)
		return
	}
	user, ok := identity.User{}, false
	if bearer(r) != "" {
		user, _, ok = g.authenticate(r)
	} else if c, err := r.Cookie(uiCookie); err == nil {
		user, ok = g.uiUser(c.Value)
	}
	if !ok && !g.authRequired() {
		user, ok = identity.User{}, true
	}
	if !ok {
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/ui/api/") {
			http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
		refuse(w, "Unauthorized: send Authorization: Bearer <token>, or sign in at /ui/login", http.StatusUnauthorized)
		return
	}
	g.opts.UI.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), user)))
}

// uiUser is who the dashboard's cookie, a token's SHA-256 in hex, stands for: a token of the
// configuration or a named one still valid.
func (g *gate) uiUser(cookie string) (identity.User, bool) {
	var sum [32]byte
	b, err := hex.DecodeString(cookie)
	if err != nil || len(b) != len(sum) {
		return identity.User{}, false
	}
	copy(sum[:], b)
	return g.byDigest(sum)
}

func (g *gate) uiLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	switch r.Method {
	case http.MethodGet:
		_ = uiLogin.Execute(w, "")
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		sum := sha256.Sum256([]byte(strings.TrimSpace(r.PostFormValue("token"))))
		if _, ok := g.uiUser(hex.EncodeToString(sum[:])); !ok {
			w.WriteHeader(http.StatusUnauthorized)
			_ = uiLogin.Execute(w, "That token is not one of this service's tokens.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: hex.EncodeToString(sum[:]), Path: "/ui", HttpOnly: true,
			MaxAge: 12 * 60 * 60, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	default:
		refuse(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// uiSameOrigin reports whether a request to the dashboard comes from its own pages (a
// form posted from /ui/): its Origin is the service's own. hostAllowed still refuses a
// loopback service reached under another name (DNS rebinding).
func uiSameOrigin(r *http.Request, origin string) bool {
	if r.URL.Path != "/ui" && !strings.HasPrefix(r.URL.Path, "/ui/") {
		return false
	}
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return strings.EqualFold(origin, scheme+"://"+r.Host)
}
