// Package dashboard serves toolsift's web page: the servers and their state, the live feed
// of searches and what the model did next, the tokens saved over time, and the likely
// misses, each with a form that adds its words to the tool the model used in the end.
//
// Pages are rendered on the server from templates and assets embedded in the binary, so
// everything but the live feed's updates works without JavaScript; live.js only refreshes
// the feed. Who may open it is the caller's concern (Loopback, or the HTTP service's
// authentication); the handler trusts every request it is given, and answers under /ui/.
package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/toolsift/toolsift/internal/terminal"
	"github.com/toolsift/toolsift/pin"
	"github.com/toolsift/toolsift/poison"
	"github.com/toolsift/toolsift/stats"
)

//go:embed assets
var assets embed.FS

// Server is one server as the dashboard shows it.
type Server struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Tools int    `json:"tools"`
	// LastError is the server's last error, secrets masked; Fix what to do about it.
	LastError string `json:"lastError,omitempty"`
	Fix       string `json:"fix,omitempty"`
	// SignIn says the server waits for the user to sign in, which the page's button starts.
	SignIn bool `json:"signIn,omitempty"`
}

// Client is a client seen, and how a search treats it (see package habit).
type Client struct {
	Name, Habit, From string
}

// Held is a tool held for review (package pin), as the dashboard shows it.
type Held struct {
	Name string // as the model would see it
	Key  pin.Key
	// Digest names the version shown: an approval or a rejection is of that version only.
	Digest   string
	Why      string
	Seen     time.Time
	Pinned   time.Time // zero when no version was
	Findings []poison.Finding
	Changes  []pin.Part
}

// Source is what the dashboard shows and changes. Store and Servers are required.
type Source struct {
	Store *stats.Store
	// Servers are the servers the request's caller may see (its context carries who it is).
	Servers func(ctx context.Context) []Server
	// Keywords adds words to a tool's keywords in the configuration (the server's name,
	// and the tool's name there); nil offers no fix.
	Keywords func(ctx context.Context, server, tool string, words []string) error
	// SignIn starts signing in to a server; nil offers no button.
	SignIn func(ctx context.Context, server string) error
	// Clients are the clients seen and their habits; nil shows none.
	Clients func() []Client
	// Held are the tools held for review the caller may see; nil shows none.
	Held func(ctx context.Context) []Held
	// Review approves (or rejects) the version of a held tool with the given digest; nil
	// offers no buttons, only the command that does it.
	Review func(ctx context.Context, key pin.Key, digest string, approve bool) error
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // nil is time.Now
}

// Handler serves the dashboard at /ui/.
type Handler struct {
	src   Source
	pages *template.Template
	mux   *http.ServeMux
}

// New returns the dashboard of src.
func New(src Source) *Handler {
	if src.Logger == nil {
		src.Logger = slog.New(slog.DiscardHandler)
	}
	if src.Now == nil {
		src.Now = time.Now
	}
	h := &Handler{src: src, mux: http.NewServeMux()}
	h.pages = template.Must(template.New("").Funcs(template.FuncMap{
		"short": stats.Short,
		"when":  func(t time.Time) string { return t.Local().Format("Jan 2 15:04:05") },
		"miss":  stats.Miss,
		"words": queryWords,
		// A server's text may hold characters a browser shows as nothing: shown as escapes.
		"visible": terminal.Escape,
		"change": func(op byte) string {
			switch op {
			case '-':
				return "removed"
			case '+':
				return "added"
			}
			return "same"
		},
		"count": func(n int, one, many string) string {
			if n == 1 {
				return "1 " + one
			}
			return strconv.Itoa(n) + " " + many
		},
	}).ParseFS(assets, "assets/*.html"))
	static, _ := fs.Sub(assets, "assets")
	h.mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /ui/{$}", h.overview)
	h.mux.HandleFunc("GET /ui/searches", h.searches)
	h.mux.HandleFunc("GET /ui/misses", h.misses)
	h.mux.HandleFunc("POST /ui/misses/fix", h.fix)
	h.mux.HandleFunc("POST /ui/signin", h.signIn)
	h.mux.HandleFunc("GET /ui/review", h.review)
	h.mux.HandleFunc("POST /ui/review", h.settle)
	h.mux.HandleFunc("GET /ui/api/report", h.apiReport)
	h.mux.HandleFunc("GET /ui/api/searches", h.apiSearches)
	h.mux.HandleFunc("GET /ui/api/servers", h.apiServers)
	h.mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "same-origin") // no-referrer would make a form's Origin "null"
	w.Header().Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// feedSize is how many searches the feed shows.
const feedSize = 50

// page is what every page template gets.
type page struct {
	Title, Nav string
	Notice     string
	Report     *stats.Report
	Chart      *chart
	Servers    []Server
	Searches   []stats.Search
	Held       []Held
	Clients    []Client
	CanFix     bool
	CanSignIn  bool
	CanReview  bool
}

func (h *Handler) render(w http.ResponseWriter, name string, p page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := h.pages.ExecuteTemplate(w, name, p); err != nil {
		h.src.Logger.Warn("dashboard page not written", "page", name, "error", err)
	}
}

func (h *Handler) fail(w http.ResponseWriter, err error) {
	h.src.Logger.Warn("dashboard: stats not read", "error", err)
	http.Error(w, "stats not read: "+err.Error(), http.StatusInternalServerError)
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	rep, err := h.src.Store.Report(h.src.Now(), 30)
	if err != nil {
		h.fail(w, err)
		return
	}
	servers := h.src.Servers(r.Context())
	// Notices are made here from what the address names, never taken from it: a link
	// from anywhere could otherwise make the page say anything.
	var notice string
	q := r.URL.Query()
	for _, s := range servers {
		switch s.Name {
		case q.Get("signin"):
			notice = "Signing in to " + s.Name + ": finish in the browser tab that opened."
		case q.Get("signinfailed"):
			notice = "Sign-in to " + s.Name + " not started (toolsift ui's output says why); run toolsift auth login " + s.Name + "."
		}
	}
	h.render(w, "overview.html", page{Title: "Overview", Nav: "overview", Report: rep, Chart: newChart(rep.Days),
		Servers: servers, CanSignIn: h.src.SignIn != nil, Notice: notice, Held: h.held(r.Context()), Clients: h.clients()})
}

func (h *Handler) searches(w http.ResponseWriter, r *http.Request) {
	list, err := h.src.Store.Searches(h.src.Now().Add(-stats.Keep), feedSize)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, "searches.html", page{Title: "Searches", Nav: "searches", Searches: list})
}

func (h *Handler) misses(w http.ResponseWriter, r *http.Request) {
	rep, err := h.src.Store.Report(h.src.Now(), 7)
	if err != nil {
		h.fail(w, err)
		return
	}
	var notice string
	if key := r.URL.Query().Get("fixed"); key != "" {
		if sr, err := h.src.Store.Search(key); err == nil && len(sr.Fixed) > 0 {
			notice = fmt.Sprintf("Added %s to %s's keywords.", strings.Join(sr.Fixed, ", "), sr.Used)
		}
	}
	h.render(w, "misses.html", page{Title: "Likely misses", Nav: "misses", Report: rep,
		CanFix: h.src.Keywords != nil, Notice: notice})
}

// fix adds the words of a form to the tool a missed search led to.
func (h *Handler) fix(w http.ResponseWriter, r *http.Request) {
	if h.src.Keywords == nil {
		http.Error(w, "this dashboard cannot change the configuration", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	sr, err := h.src.Store.Search(r.PostForm.Get("search"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if sr.UsedServer == "" || sr.UsedName == "" {
		http.Error(w, "this miss led to no tool toolsift knows: add keywords by hand (docs/reference.md)", http.StatusBadRequest)
		return
	}
	words := queryWords(r.PostForm.Get("words"))
	if len(words) == 0 {
		http.Error(w, "no words to add: write a few, separated by spaces", http.StatusBadRequest)
		return
	}
	if err := h.src.Keywords(r.Context(), sr.UsedServer, sr.UsedName, words); err != nil {
		h.src.Logger.Warn("dashboard: keywords not added", "server", sr.UsedServer, "tool", sr.UsedName, "error", err)
		http.Error(w, "keywords not added: "+err.Error(), http.StatusConflict)
		return
	}
	if err := h.src.Store.MarkFixed(sr.Key, words); err != nil {
		h.src.Logger.Warn("dashboard: fix not recorded", "error", err)
	}
	http.Redirect(w, r, "/ui/misses?fixed="+url.QueryEscape(sr.Key), http.StatusSeeOther)
}

func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	if h.src.SignIn == nil {
		http.Error(w, "sign in with toolsift auth login NAME", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	name := r.PostFormValue("server")
	known := slices.ContainsFunc(h.src.Servers(r.Context()), func(s Server) bool { return s.Name == name && s.SignIn })
	if !known {
		http.Error(w, "no server by that name waits for a sign-in", http.StatusBadRequest)
		return
	}
	to := "/ui/?signin=" + url.QueryEscape(name)
	if err := h.src.SignIn(r.Context(), name); err != nil {
		h.src.Logger.Error("dashboard: sign-in not started", "server", name, "error", err)
		to = "/ui/?signinfailed=" + url.QueryEscape(name)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

func (h *Handler) clients() []Client {
	if h.src.Clients == nil {
		return nil
	}
	return h.src.Clients()
}

func (h *Handler) held(ctx context.Context) []Held {
	if h.src.Held == nil {
		return nil
	}
	return h.src.Held(ctx)
}

func (h *Handler) review(w http.ResponseWriter, r *http.Request) {
	held := h.held(r.Context())
	// Notices are made here, never taken from the address (see overview).
	var notice string
	switch r.URL.Query().Get("done") {
	case "approve":
		notice = "Approved: that version is pinned, and the tool is back for every session within a second."
	case "reject":
		notice = "Rejected: that version stays out; a later one is held for review again."
	}
	h.render(w, "review.html", page{Title: "Review", Nav: "review", Held: held, CanReview: h.src.Review != nil, Notice: notice})
}

// settle approves or rejects a held tool's version.
func (h *Handler) settle(w http.ResponseWriter, r *http.Request) {
	if h.src.Review == nil {
		http.Error(w, "approve or reject with toolsift review on the host", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	name, digest, verdict := r.PostFormValue("tool"), r.PostFormValue("digest"), r.PostFormValue("verdict")
	held := h.held(r.Context())
	i := slices.IndexFunc(held, func(t Held) bool { return t.Name == name && t.Digest == digest })
	if i < 0 || (verdict != "approve" && verdict != "reject") {
		http.Error(w, "no such tool held for review in that version: reload the page", http.StatusConflict)
		return
	}
	t := held[i]
	if err := h.src.Review(r.Context(), t.Key, digest, verdict == "approve"); err != nil {
		h.src.Logger.Warn("dashboard: review not recorded", "tool", name, "error", err)
		http.Error(w, "not recorded: "+err.Error(), http.StatusConflict)
		return
	}
	h.src.Logger.Info("dashboard: tool reviewed", "tool", name, "verdict", verdict)
	http.Redirect(w, r, "/ui/review?done="+verdict, http.StatusSeeOther)
}

func (h *Handler) apiReport(w http.ResponseWriter, _ *http.Request) {
	rep, err := h.src.Store.Report(h.src.Now(), 30)
	if err != nil {
		h.fail(w, err)
		return
	}
	writeJSON(w, rep)
}

func (h *Handler) apiSearches(w http.ResponseWriter, _ *http.Request) {
	list, err := h.src.Store.Searches(h.src.Now().Add(-stats.Keep), feedSize)
	if err != nil {
		h.fail(w, err)
		return
	}
	if list == nil {
		list = []stats.Search{}
	}
	writeJSON(w, list)
}

func (h *Handler) apiServers(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, h.src.Servers(r.Context()))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// stopWords are left out of the words a miss offers to add: they tell no tool apart.
var stopWords = map[string]bool{"a": true, "an": true, "and": true, "the": true, "of": true, "to": true,
	"in": true, "on": true, "for": true, "with": true, "my": true, "me": true, "i": true, "is": true, "it": true}

// queryWords are the words of a query worth adding as keywords: lowercased, without the
// query syntax (server:, +, select:), stop words and repeats.
func queryWords(q string) []string {
	var out []string
	for _, f := range strings.Fields(q) {
		if strings.Contains(f, ":") {
			continue
		}
		f = strings.ToLower(strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }))
		if len(f) < 2 || len(f) > 40 || stopWords[f] || slices.Contains(out, f) || len(out) == 8 {
			continue
		}
		out = append(out, f)
	}
	return out
}
