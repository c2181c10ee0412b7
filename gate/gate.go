// Package gate is toolsift's HTTP service: MCP over streamable HTTP (/mcp) and the legacy
// SSE transport (/sse, /message), and what every request must pass before MCP sees it: its
// Origin and Host, its bearer token, its size, its session's limits; liveness (/healthz)
// and readiness (/readyz); and bounds on connections, sessions and read time, so that no
// one without a token can take the service down.
package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/internal/apitoken"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/internal/jsonrpc"
	"github.com/toolsift/toolsift/internal/trace"
	"github.com/toolsift/toolsift/upstream"
)

// Proxy is what the gate serves.
type Proxy interface {
	// MCP is the MCP server that serves the sessions.
	MCP() *server.MCPServer
	// Statuses reports the upstream servers, their errors masked, for /readyz.
	Statuses() []upstream.Status
	// SessionBusy reports whether the session has its MaxCalls of calls in flight.
	SessionBusy(id string) bool
	// OnSessionOpen registers f to be called with the ID of each session as it opens, in the
	// context of the request that opened it.
	OnSessionOpen(f func(ctx context.Context, id string))
	// OnInitialized registers f to be called, in the context of the request, for each
	// initialize that succeeded.
	OnInitialized(f func(ctx context.Context))
	// OnSessionEnd registers f to be called with the ID of each session that ends.
	OnSessionEnd(f func(id string))
	// Refused returns why the proxy refuses a request before any session sees it, or "".
	Refused(msg jsonrpc.Message) string
}

// Options configures the HTTP service. The zero value of each field means its documented
// default.
type Options struct {
	// Logger receives the service's events; nil discards them.
	Logger *slog.Logger
	// MaxCalls is the proxy's bound on a session's calls in flight (proxy.Options.MaxCalls);
	// 0 means 32.
	MaxCalls int
	// Tokens are the bearer tokens a client may present, from the configuration; with none
	// and no named token either, no authentication.
	Tokens []string
	// Named, if set, holds the named tokens made with toolsift token create; it is read
	// again whenever it changes.
	Named *apitoken.Store
	// OIDC, if set, makes the service an OAuth protected resource that accepts the access
	// tokens of the team's identity provider (see OIDC).
	OIDC *OIDC
	// Metrics, if set, serves /metrics: to a request that passes authentication like any
	// other, or to anyone with MetricsPublic.
	Metrics       http.Handler
	MetricsPublic bool
	// Shared, if set, is the state the replicas of the service share: session IDs every
	// replica knows, and who opened each, so that any replica serves any session.
	Shared Shared
	// Pages, if set, serves the sign-in pages people open in their browsers, at /connect/
	// and /oauth/callback: without a bearer token, as a browser has none (see signin).
	Pages http.Handler
	// UI, if set, serves the dashboard at /ui/, to those who pass authentication (a
	// browser signs in with its token at /ui/login).
	UI http.Handler
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
	// ReadTimeout bounds reading a request's headers and body, and how long a keep-alive
	// connection may idle; 0 means 30s. A client that sends a byte now and then holds a
	// connection no longer than this.
	ReadTimeout time.Duration
	// MaxConnections bounds open connections (see connLimit); 0 means 4096, or half of
	// what the process's file limit leaves when that is lower.
	MaxConnections int
	// MaxSessions bounds open sessions; 0 means 2000. MaxSessionsPerToken bounds those one
	// token opened; 0 means 500. Past either, a request that would open a session gets 503
	// with Retry-After.
	MaxSessions, MaxSessionsPerToken int
}

// Shared is the state the replicas of a service share (state.Redis).
type Shared interface {
	// ResolveSessionIdManager gives mcp-go session IDs every replica knows.
	server.SessionIdManagerResolver
	// SetOwner records the credential that opened session id; Owner returns it.
	SetOwner(ctx context.Context, id string, cred [32]byte) error
	Owner(ctx context.Context, id string) (cred [32]byte, ok bool, err error)
	// Healthy returns why the shared state cannot be used now, or nil.
	Healthy(ctx context.Context) error
}

// withDefaults fills in the zero fields.
func (opts Options) withDefaults() Options {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxCalls == 0 {
		opts.MaxCalls = 32
	}
	if opts.SessionIdleTimeout == 0 {
		opts.SessionIdleTimeout = 30 * time.Minute
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	if opts.MaxSessionRequests == 0 {
		// Room beside MaxCalls hung calls for searches and lists, as over stdio.
		opts.MaxSessionRequests = opts.MaxCalls + 8
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = 30 * time.Second
	}
	if opts.MaxConnections == 0 {
		opts.MaxConnections = 4096
		// Half of what is left for clients: the other half is for upstream servers' pipes
		// and connections, and for the files toolsift itself opens.
		if limit := fileLimit(); limit > 0 {
			opts.MaxConnections = min(opts.MaxConnections, max(16, (limit-128)/2))
		}
	}
	if opts.MaxSessions == 0 {
		opts.MaxSessions = 2000
	}
	if opts.MaxSessionsPerToken == 0 {
		opts.MaxSessionsPerToken = 500
	}
	return opts
}

// Serve serves p over HTTP on ln (see Handler) until ctx ends, then stops accepting, lets
// requests in flight finish (up to 10s), ends open streams and returns. Connections are
// bounded (see connLimit) and timed (ReadTimeout).
func Serve(ctx context.Context, ln net.Listener, p Proxy, opts Options) error {
	opts = opts.withDefaults()
	handler, closeStreams := Handler(p, opts)
	limited := newConnLimit(framedListener{ln}, opts.MaxConnections)
	hs := &http.Server{
		Handler:           handler,
		ConnContext:       withConn,
		ReadHeaderTimeout: opts.ReadTimeout,
		// Not ReadTimeout: it would stay set while an SSE stream is written, and end the
		// stream when it ran out. The gate bounds the reading of each body instead.
		IdleTimeout: opts.ReadTimeout,
		ConnState:   limited.track,
		ErrorLog:    slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(limited) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := errors.Join(closeStreams(sctx), hs.Shutdown(sctx))
	<-served
	return err
}

// Handler serves p over streamable HTTP at /mcp and over the legacy SSE transport at /sse
// and /message, liveness at /healthz and upstream readiness at /readyz. Call the returned
// function at shutdown: it ends open streams.
func Handler(p Proxy, opts Options) (http.Handler, func(context.Context) error) {
	opts = opts.withDefaults()
	owners := newOwners(opts.MaxSessions, opts.MaxSessionsPerToken)
	// A session ended by DELETE or by mcp-go's idle sweeper is unregistered, and the proxy
	// tells of it: its place is freed.
	p.OnSessionEnd(owners.forget)
	p.OnSessionOpen(func(ctx context.Context, id string) {
		if c := claimOf(ctx); c != nil {
			c.bind(id)
			if opts.Shared != nil {
				if err := opts.Shared.SetOwner(ctx, id, c.cred); err != nil {
					opts.Logger.Warn("session owner not saved to the shared state: other replicas will not serve it", "error", err)
				}
			}
		}
	})
	p.OnInitialized(func(ctx context.Context) {
		if c := claimOf(ctx); c != nil {
			c.earn()
		}
	})
	ids := server.WithStateful(true)
	if opts.Shared != nil {
		ids = server.WithSessionIdManagerResolver(opts.Shared)
	}
	streamable := server.NewStreamableHTTPServer(p.MCP(),
		ids,
		server.WithSessionIdleTTL(opts.SessionIdleTimeout),
		server.WithStreamableHTTPLogger(opts.Logger),
	)
	sse := server.NewSSEServer(p.MCP(), server.WithKeepAlive(true))
	mux := http.NewServeMux()
	mux.Handle("/mcp", streamable)
	mux.Handle("/sse", sse.SSEHandler())
	mux.Handle("/message", sse.MessageHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		var shared error
		if opts.Shared != nil {
			shared = opts.Shared.Healthy(r.Context())
		}
		readyz(w, r, p.Statuses(), opts.Shared != nil, shared)
	})

	g := &gate{opts: opts, next: mux, inFlight: map[string]int{}, owners: owners, p: p}
	if opts.Pages != nil {
		mux.Handle("GET /connect/", opts.Pages)
		mux.Handle("GET /oauth/callback", opts.Pages)
	}
	if opts.OIDC != nil {
		g.oidc = newVerifier(*opts.OIDC)
		mux.HandleFunc("GET "+MetadataPath, g.oidc.metadata)
		mux.HandleFunc("GET /.well-known/oauth-protected-resource", g.oidc.metadata)
	}
	for _, t := range opts.Tokens {
		g.tokens = append(g.tokens, sha256.Sum256([]byte(t)))
	}
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
//
// With shared state (hasShared), it says whether the store answers (sharedErr nil): a replica
// whose store is down still serves the sessions it knows, so it stays ready.
func readyz(w http.ResponseWriter, r *http.Request, statuses []upstream.Status, hasShared bool, sharedErr error) {
	type server struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Tools int    `json:"tools"`
		Error string `json:"error,omitempty"`
		// Stderr is what the server printed about the error, secrets masked.
		Stderr string `json:"stderr,omitempty"`
	}
	var out struct {
		Ready   bool     `json:"ready"`
		Servers []server `json:"servers"`
		// Shared is the shared state's condition: "ok", or "unreachable" (and why, to
		// those who may see errors).
		Shared string `json:"sharedState,omitempty"`
	}
	if hasShared {
		out.Shared = "ok"
		if sharedErr != nil {
			out.Shared = "unreachable: serving this replica's sessions from memory"
			if r.Context().Value(showErrors{}) != nil {
				out.Shared += ": " + sharedErr.Error()
			}
		}
	}
	for _, st := range statuses {
		sv := server{Name: st.Name, State: string(st.State), Tools: st.Tools}
		if st.Err != nil && r.Context().Value(showErrors{}) != nil {
			sv.Error, sv.Stderr = st.Err.Error(), st.Stderr
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
	opts   Options
	next   http.Handler
	tokens [][32]byte // SHA-256 of each token, compared in constant time

	mu       sync.Mutex // guards inFlight
	inFlight map[string]int

	oidc *verifier // nil without Options.OIDC

	owners *owners
	p      Proxy
}

// sessionOf is the one session a request acts on, from every place an ID can come from:
// streamable HTTP's Mcp-Session-Id header and, on /message, the legacy SSE transport's
// sessionId parameter. mcp-go reads one or the other depending on the path, so the gate
// checks them all: a request naming two different sessions is refused (ok false) rather
// than checked for one and served for the other.
func sessionOf(r *http.Request) (id string, ok bool) {
	ids := r.Header.Values(server.HeaderKeySessionID)
	if r.URL.Path == "/message" {
		ids = append(ids, r.URL.Query()["sessionId"]...)
	}
	for _, each := range ids {
		if id != "" && each != id {
			return "", false
		}
		id = each
	}
	return id, true
}

// showErrors marks a /readyz request that may see the servers' errors.
type showErrors struct{}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Bounded before anything is read: a body sent a byte at a time must not hold a
	// connection (and a goroutine) for longer than ReadTimeout. Cleared once it is read.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(g.opts.ReadTimeout))
	if !g.wellFormed(w, r) {
		return
	}
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		g.probe(w, r)
		return
	}
	if r.URL.Path == "/metrics" && g.opts.Metrics != nil {
		g.metrics(w, r)
		return
	}
	if g.opts.UI != nil && (r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, "/ui/")) {
		g.ui(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") ||
		g.opts.Pages != nil && (strings.HasPrefix(r.URL.Path, "/connect/") || r.URL.Path == "/oauth/callback") {
		// Public: how a client learns where to sign in, and the pages a browser opens.
		w.Header().Set("Connection", "close")
		g.next.ServeHTTP(w, r)
		return
	}
	user, cred, id, ok := g.admit(w, r)
	if !ok {
		return
	}
	r = r.WithContext(trace.FromHeaders(identity.NewContext(r.Context(), user), r.Header))
	msg, ok := g.readBody(w, r)
	if !ok {
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	var method string // of a request; "" for a notification or an answer
	if msg.IsRequest() {
		method = msg.Method
	}
	// A request that opens a session takes a place among the sessions first; the proxy
	// tells the claim the session's ID (OnSessionOpen) and whether its initialize succeeded.
	if opens := id == "" && (r.Method == http.MethodGet && r.URL.Path == "/sse" || method == string(mcp.MethodInitialize)); opens {
		if !g.owners.reserve(cred) {
			w.Header().Set("Retry-After", "60")
			refuse(w, "Service Unavailable: too many open sessions (maxSessions, maxSessionsPerToken); end one with DELETE, or retry later", http.StatusServiceUnavailable)
			return
		}
		c := &claim{cred: cred, owners: g.owners, answered: r.Method == http.MethodPost}
		r = r.WithContext(context.WithValue(r.Context(), claimKey{}, c))
		defer g.settle(c)
	}
	if why := g.p.Refused(msg); why != "" && r.URL.Path == "/mcp" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(mcp.NewJSONRPCError(msg.ID, mcp.METHOD_NOT_FOUND, why, nil))
		return
	}
	// Only requests count: a cancellation must get through to the calls it cancels.
	if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && method != "" {
		if !g.enter(sid) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests in flight for this session", http.StatusTooManyRequests)
			return
		}
		defer g.leave(sid)
	}
	// A request without a session (protocol 2026-07-28) counts against its caller instead:
	// one credential has as many in flight as one session may. A subscriptions/listen
	// stream, open for as long as its client runs, is not a request in flight.
	if r.Header.Get(server.HeaderKeySessionID) == "" && method != "" && method != string(mcp.MethodInitialize) &&
		method != string(mcp.MethodSubscriptionsListen) && r.URL.Path == "/mcp" {
		caller := "caller:" + hex.EncodeToString(cred[:])
		if !g.enter(caller) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests in flight for this caller", http.StatusTooManyRequests)
			return
		}
		defer g.leave(caller)
	}
	// The legacy SSE transport accepts a message at once and answers on the stream, so its
	// requests in flight cannot be counted here: refuse a call while the session's calls are
	// at maxCalls instead (a search, a ping or a cancellation goes through).
	if sid := r.URL.Query().Get("sessionId"); sid != "" && r.URL.Path == "/message" && method == "tools/call" && g.p.SessionBusy(sid) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "Too many calls in flight for this session", http.StatusTooManyRequests)
		return
	}
	// The client's credentials are for toolsift alone: nothing forwards request headers
	// upstream, and they are never logged.
	g.next.ServeHTTP(w, r)
}

// wellFormed refuses a request framed two ways, or sent from a page or under a name that
// is not this machine's.
func (g *gate) wellFormed(w http.ResponseWriter, r *http.Request) bool {
	if doublyFramed(r) {
		refuse(w, "Bad Request: a request must not carry both Content-Length and Transfer-Encoding", http.StatusBadRequest)
		return false
	}
	if len(r.TransferEncoding) > 0 {
		// Nothing after a chunked body is read as a request: see framedConn.
		w.Header().Set("Connection", "close")
	}
	if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) && !uiSameOrigin(r, origin) {
		// (The dashboard checks its own requests' origin more strictly: see ui.)
		refuse(w, "Forbidden: origin "+origin+" is not allowed", http.StatusForbidden)
		return false
	}
	if !hostAllowed(r) {
		refuse(w, "Forbidden: host "+r.Host+" is not this machine", http.StatusForbidden)
		return false
	}
	return true
}

// probe answers /healthz and /readyz, to anyone; the servers' errors only with a token.
func (g *gate) probe(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := g.authenticate(r); ok {
		r = r.WithContext(context.WithValue(r.Context(), showErrors{}, true))
	}
	// A probe's connection is not kept: anyone may ask, and must not hold sockets.
	w.Header().Set("Connection", "close")
	g.next.ServeHTTP(w, r)
}

// readBody reads a POST's body, within MaxBodyBytes and the read deadline, decodes its
// envelope once, and leaves the body as read for mcp-go.
func (g *gate) readBody(w http.ResponseWriter, r *http.Request) (jsonrpc.Message, bool) {
	if r.ContentLength > g.opts.MaxBodyBytes {
		refuse(w, "Request body too large", http.StatusRequestEntityTooLarge)
		return jsonrpc.Message{}, false
	}
	// A body of unstated length is cut off at the limit instead.
	r.Body = http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes)
	if r.Method != http.MethodPost {
		return jsonrpc.Message{}, true
	}
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		refuse(w, "Request body too large", http.StatusRequestEntityTooLarge)
		return jsonrpc.Message{}, false
	case err != nil:
		refuse(w, "Request body not received within the read timeout", http.StatusRequestTimeout)
		return jsonrpc.Message{}, false
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	return jsonrpc.Parse(body), true
}

// refuse answers a request toolsift will not serve, and closes its connection: a client
// that was refused (an unknown token, a foreign origin) must not keep a socket open.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
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

// settle gives the place a claim reserved back if no session took it, and ends a session
// that an initialize did not earn. It runs once the request is served: for an SSE stream,
// once the stream has ended.
func (g *gate) settle(c *claim) {
	id, bound, earned := c.state()
	switch {
	case !bound:
		g.owners.release(c.cred)
	case c.answered && !earned:
		g.owners.forget(id)
		g.endSession(id)
	}
}

// endSession ends a session the way its client would, with a DELETE: for one that mcp-go
// opened for an initialize it refused.
func (g *gate) endSession(id string) {
	req, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	g.next.ServeHTTP(&discard{}, req)
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
