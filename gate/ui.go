package gate

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/toolsift/toolsift/internal/identity"
)

// uiCookie carries, for a browser, the bearer token a person gave the dashboard's sign-in
// form: a browser sends no Authorization header of its own. HttpOnly, SameSite=Strict, and
// sent to /ui only.
const uiCookie = "toolsift_ui_token"

var uiLogin = template.Must(template.New("").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in · toolsift</title></head>
<body><main><h1>toolsift</h1>
{{if .}}<p role="alert">{{.}}</p>{{end}}
<form method="post" action="/ui/login">
<label>Your toolsift token (Authorization: Bearer): <input type="password" name="token" autocomplete="off"></label>
<button>Open the dashboard</button>
</form>
<p>A named token comes from <code>toolsift token create NAME</code>, run by the service's operator.</p>
</main></body></html>
`))

// ui serves the dashboard to those who pass the service's authentication: with the
// Authorization header, or with the cookie its sign-in form sets.
func (g *gate) ui(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	if r.URL.Path == "/ui/login" {
		g.uiLogin(w, r)
		return
	}
	if bearer(r) == "" {
		if c, err := r.Cookie(uiCookie); err == nil {
			r.Header.Set("Authorization", "Bearer "+c.Value)
		}
	}
	user, _, ok := g.authenticate(r)
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

func (g *gate) uiLogin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
	switch r.Method {
	case http.MethodGet:
		_ = uiLogin.Execute(w, "")
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		tok := strings.TrimSpace(r.PostFormValue("token"))
		check := r.Clone(r.Context())
		check.Header = http.Header{"Authorization": {"Bearer " + tok}}
		if _, _, ok := g.authenticate(check); tok == "" || !ok {
			w.WriteHeader(http.StatusUnauthorized)
			_ = uiLogin.Execute(w, "That token is not one this service accepts.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: uiCookie, Value: tok, Path: "/ui", HttpOnly: true,
			Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https", SameSite: http.SameSiteStrictMode})
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
