package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
)

// Loopback guards a dashboard served on the loopback interface to its user alone: the
// address it prints carries a token good once, which the first request spends for a
// cookie that the browser keeps for the rest of the visit (HttpOnly, SameSite=Strict).
// Another local user who saw the address finds it spent. A browser sends a host's cookies
// to every port of it (RFC 6265 §8.5), so a server another user runs on this machine, if
// the browser visits it, receives the cookie: it opens this dashboard (stats, keywords)
// while it runs, and nothing else.
type Loopback struct {
	next  http.Handler
	token string

	mu       sync.Mutex // guards spent and sessions
	spent    bool
	sessions map[string]bool
}

// cookieName carries a visit's session.
const cookieName = "toolsift_ui"

// NewLoopback guards next with a new one-time token.
func NewLoopback(next http.Handler) *Loopback {
	return &Loopback{next: next, token: random(), sessions: map[string]bool{}}
}

// Path is the address path, with its token, to open first.
func (l *Loopback) Path() string { return "/ui/?token=" + l.token }

func random() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func (l *Loopback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding: a name that resolves to 127.0.0.1 reaches this port with its own
	// Host, and must not be served.
	if host, _, err := net.SplitHostPort(r.Host); err != nil || !(host == "localhost" || net.ParseIP(host).IsLoopback()) {
		http.Error(w, "Forbidden: open the dashboard at the address toolsift ui printed", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/favicon.ico" {
		// Asked for by the browser on every page without one, the API's answers too.
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		// A form posted from another origin would carry no cookie (SameSite=Strict); the
		// Origin check is the second lock.
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			http.Error(w, "Forbidden: cross-origin request", http.StatusForbidden)
			return
		}
	}
	if tok := r.URL.Query().Get("token"); tok != "" {
		l.mu.Lock()
		ok := !l.spent && subtle.ConstantTimeCompare([]byte(tok), []byte(l.token)) == 1
		var id string
		if ok {
			l.spent, id = true, random()
			l.sessions[id] = true
		}
		l.mu.Unlock()
		if !ok {
			http.Error(w, "Unauthorized: this address was used already, or is not toolsift ui's. Run toolsift ui again for a new one.", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	c, err := r.Cookie(cookieName)
	l.mu.Lock()
	ok := err == nil && l.sessions[c.Value]
	l.mu.Unlock()
	if !ok {
		http.Error(w, "Unauthorized: open the address toolsift ui printed (each is good once; run toolsift ui again for a new one).", http.StatusUnauthorized)
		return
	}
	l.next.ServeHTTP(w, r)
}
