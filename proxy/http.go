package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// HTTPOptions configures the HTTP front end. The zero value of each field means its
// documented default.
type HTTPOptions struct {
	// Tokens are the bearer tokens a client may present; none means no authentication.
	Tokens []string
	// AllowedOrigins are browser origins allowed besides localhost ones. A request with any
	// other Origin header gets 403: DNS-rebinding protection.
	AllowedOrigins []string
	// SessionIdleTimeout ends a session idle this long and frees its state; 0 means 30m.
	SessionIdleTimeout time.Duration
	// MaxBodyBytes limits a request body; 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxSessionRequests limits the requests one session may have in flight; 0 means the
	// server's MaxCalls and 8 more (40 by default), so that hung calls leave room for searches.
	MaxSessionRequests int
}

// sessionVersions are the protocol revisions served over HTTP: per-session tool lists are
// valid only up to 2025-11-25, so the stateless 2026-07-28 core is not offered.
var sessionVersions = []string{
	mcp.LATEST_LEGACY_PROTOCOL_VERSION, "2025-06-18", "2025-03-26", "2024-11-05",
}

// HTTPHandler serves MCP over streamable HTTP at /mcp and over the legacy SSE transport at
// /sse and /message, liveness at /healthz and upstream readiness at /readyz. Call the
// returned function at shutdown: it ends open streams.
func (s *Server) HTTPHandler(opts HTTPOptions) (http.Handler, func(context.Context) error) {
	if opts.SessionIdleTimeout == 0 {
		opts.SessionIdleTimeout = 30 * time.Minute
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.MaxSessionRequests == 0 {
		// Room beside MaxCalls hung calls for searches and lists, as over stdio.
		opts.MaxSessionRequests = s.opts.MaxCalls + 8
	}
	streamable := server.NewStreamableHTTPServer(s.mcp,
		server.WithStateful(true),
		server.WithSessionIdleTTL(opts.SessionIdleTimeout),
		server.WithStreamableHTTPProtocolVersions(sessionVersions...),
		server.WithStreamableHTTPLogger(s.log),
	)
	sse := server.NewSSEServer(s.mcp, server.WithKeepAlive(true))
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.Handle("/sse", sse.SSEHandler())
	mux.Handle("/message", sse.MessageHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", s.readyz)

	g := &gate{opts: opts, next: mux, inFlight: map[string]int{}, owners: s.owners, busy: s.sessionBusy}
	for _, t := range opts.Tokens {
		g.tokens = append(g.tokens, sha256.Sum256([]byte(t)))
	}
	// A session ended by DELETE or by mcp-go's idle sweeper is unregistered, and the
	// proxy's OnUnregisterSession hook frees its state.
	shutdown := func(ctx context.Context) error {
		err := sse.Shutdown(ctx)
		if err2 := streamable.Shutdown(ctx); err == nil {
			err = err2
		}
		return err
	}
	return g, shutdown
}

// readyz reports each upstream's state; 503 until at least one is connected or idle. Errors
// can carry what a server printed (an API key it refused, say), so only a request the gate
// marked (showErrors) gets them.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	type server struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Tools int    `json:"tools"`
		Error string `json:"error,omitempty"`
	}
	var out struct {
		Ready   bool     `json:"ready"`
		Servers []server `json:"servers"`
	}
	for _, st := range s.ups.Statuses() {
		sv := server{Name: st.Name, State: string(st.State), Tools: st.Tools}
		if st.Err != nil && r.Context().Value(showErrors{}) != nil {
			sv.Error = st.Err.Error()
		}
		out.Ready = out.Ready || st.State.Usable()
		out.Servers = append(out.Servers, sv)
	}
	w.Header().Set("Content-Type", "application/json")
	if !out.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	json.NewEncoder(w).Encode(out)
}

// gate checks what every request must pass before MCP sees it: its Origin, its bearer
// token, its size, and its session's number of requests in flight.
type gate struct {
	opts   HTTPOptions
	next   http.Handler
	tokens [][32]byte // SHA-256 of each token, compared in constant time

	mu       sync.Mutex // guards inFlight
	inFlight map[string]int

	owners *owners // shared with the Server, which forgets a session's owner when it ends
	// busy reports whether a session has its MaxCalls of calls in flight.
	busy func(id string) bool
}

// sessionOf is the session a request names: streamable HTTP's Mcp-Session-Id header, or the
// legacy SSE transport's sessionId parameter on /message.
func sessionOf(r *http.Request) string {
	if id := r.Header.Get(server.HeaderKeySessionID); id != "" {
		return id
	}
	if r.URL.Path == "/message" {
		return r.URL.Query().Get("sessionId")
	}
	return ""
}

// owners binds each HTTP session to the credential that opened it.
type owners struct {
	mu sync.Mutex // guards m
	m  map[string][32]byte
}

func (o *owners) bind(id string, cred [32]byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.m[id]; !ok {
		o.m[id] = cred
	}
}

// allows reports whether cred may use session id: the one that opened it, or any for a
// session whose opening was not seen (mcp-go answers an unknown one with 404).
func (o *owners) allows(id string, cred [32]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.m[id]
	return !ok || subtle.ConstantTimeCompare(owner[:], cred[:]) == 1
}

func (o *owners) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, id)
}

// passWriter passes a response through: the writers that watch or mend one embed it. SSE
// streams must reach the client as they are written, so it flushes.
type passWriter struct{ http.ResponseWriter }

func (w passWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w passWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idWriter gives the client back the big id of its request (see wrapBigID), in a JSON
// answer or an SSE stream.
type idWriter struct{ passWriter }

func (w idWriter) Write(p []byte) (int, error) {
	if _, err := w.passWriter.Write(unwrapBigID(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// spliceWriter splices a tools/list or tool_search response as it is written (see
// pendingSplices).
type spliceWriter struct {
	passWriter
	lists *pendingSplices
}

func (w spliceWriter) Write(p []byte) (int, error) {
	pl, ok := w.lists.take(p)
	if !ok {
		return w.passWriter.Write(p)
	}
	if _, err := w.passWriter.Write(pl.splice(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// claimer watches the response to a request that opens a session for the session's ID: the
// Mcp-Session-Id header of streamable HTTP, or the endpoint event of the legacy SSE stream
// ("data: /message?sessionId=ID").
type claimer struct {
	passWriter
	claim func(id string)
	done  bool
}

func (c *claimer) WriteHeader(code int) {
	c.fromHeader()
	c.ResponseWriter.WriteHeader(code)
}

func (c *claimer) Write(p []byte) (int, error) {
	c.fromHeader()
	if !c.done {
		if _, rest, ok := bytes.Cut(p, []byte("sessionId=")); ok {
			end := bytes.IndexFunc(rest, func(r rune) bool { return !isSessionIDRune(r) })
			if end < 0 {
				end = len(rest)
			}
			c.claim(string(rest[:end]))
			c.done = true
		}
	}
	return c.ResponseWriter.Write(p)
}

func (c *claimer) fromHeader() {
	if id := c.Header().Get(server.HeaderKeySessionID); id != "" && !c.done {
		c.claim(id)
		c.done = true
	}
}

func isSessionIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}

// showErrors marks a /readyz request that may see the servers' errors.
type showErrors struct{}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
		http.Error(w, "Forbidden: origin "+origin+" is not allowed", http.StatusForbidden)
		return
	}
	if !hostAllowed(r) {
		http.Error(w, "Forbidden: host "+r.Host+" is not this machine", http.StatusForbidden)
		return
	}
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		if len(g.tokens) == 0 || g.authorized(r) {
			r = r.WithContext(context.WithValue(r.Context(), showErrors{}, true))
		}
		g.next.ServeHTTP(w, r)
		return
	}
	if len(g.tokens) > 0 && !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolsift"`)
		http.Error(w, "Unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
		return
	}
	if len(g.tokens) > 0 {
		// A session belongs to the token that opened it: its ID travels in headers and URLs
		// and must not let another token's holder in. To them it does not exist.
		cred := credential(r)
		if id := sessionOf(r); id != "" {
			if !g.owners.allows(id, cred) {
				http.Error(w, "Not Found: no such session", http.StatusNotFound)
				return
			}
		} else {
			w = &claimer{passWriter: passWriter{w}, claim: func(id string) { g.owners.bind(id, cred) }}
		}
	}
	if r.ContentLength > g.opts.MaxBodyBytes {
		http.Error(w, "Request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	// A body of unstated length is cut off at the limit instead.
	r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
	if r.Method == http.MethodGet && r.URL.Path == "/sse" {
		// Over legacy SSE, answers come on this stream, not on the POST that asked.
		w = idWriter{passWriter{w}}
	}
	var method string // of a request; "" for a notification or an answer
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "Request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if wrapped := wrapBigID(body); len(wrapped) != len(body) {
			body = wrapped
			w = idWriter{passWriter{w}}
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		_, method, _ = request(body)
		if (method == string(mcp.MethodToolsList) || method == string(mcp.MethodToolsCall)) && r.URL.Path == "/mcp" {
			// Streamable HTTP answers on the request's own response: a list or a search
			// result is spliced as it is written (see pendingSplices). Outside idWriter,
			// which would change the id the response is known by.
			lists := &pendingSplices{}
			w = spliceWriter{passWriter{w}, lists}
			r = r.WithContext(withPendingSplices(r.Context(), lists))
		}
	}
	// Only requests count: a cancellation must get through to the calls it cancels.
	if id := r.Header.Get(server.HeaderKeySessionID); id != "" && method != "" {
		if !g.enter(id) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests in flight for this session", http.StatusTooManyRequests)
			return
		}
		defer g.leave(id)
	}
	// The legacy SSE transport accepts a message at once and answers on the stream, so its
	// requests in flight cannot be counted here: refuse a call while the session's calls are
	// at maxCalls instead (a search, a ping or a cancellation goes through).
	if id := r.URL.Query().Get("sessionId"); id != "" && r.URL.Path == "/message" && method == "tools/call" && g.busy(id) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Too many calls in flight for this session", http.StatusTooManyRequests)
		return
	}
	// The client's credentials are for toolsift alone: nothing forwards request headers
	// upstream, and they are never logged.
	g.next.ServeHTTP(w, r)
}

// credential is the SHA-256 of the request's bearer token; zero without one.
func credential(r *http.Request) [32]byte {
	// RFC 9110 §11.1: the scheme is case-insensitive.
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return [32]byte{}
	}
	return sha256.Sum256([]byte(strings.TrimSpace(tok)))
}

func (g *gate) authorized(r *http.Request) bool {
	sum := credential(r)
	if sum == ([32]byte{}) {
		return false
	}
	match := 0
	for _, t := range g.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return match == 1
}

// hostAllowed refuses a request that reached a loopback address under another host's name:
// a web page whose name was rebound to 127.0.0.1 (DNS rebinding). mcp-go checks this for
// /mcp alone; the gate checks it for every path.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	ip, _, err := net.SplitHostPort(local.String())
	if err != nil || !IsLoopback(ip) {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return IsLoopback(strings.Trim(host, "[]"))
}

// originAllowed admits localhost origins and the configured ones.
func (g *gate) originAllowed(origin string) bool {
	for _, o := range g.opts.AllowedOrigins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	return IsLoopback(u.Hostname())
}

// IsLoopback reports whether host, a host name or IP address without port or brackets, names
// this machine only: "localhost" in any case, or a loopback address (127.0.0.0/8, ::1). A
// listener bound to such a host cannot be reached from the network, and an Origin naming one
// is a local page.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (g *gate) enter(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[id] >= g.opts.MaxSessionRequests {
		return false
	}
	g.inFlight[id]++
	return true
}

func (g *gate) leave(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[id]--; g.inFlight[id] <= 0 {
		delete(g.inFlight, id)
	}
}
