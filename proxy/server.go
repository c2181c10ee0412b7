// Package proxy is the MCP server clients talk to. It owns client sessions and what each one
// sees: the always-load tools, tool_search and call_tool, then the tools it unlocked.
package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/finder"
	"github.com/toolsift/toolsift/internal/audit"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/internal/jsonrpc"
	"github.com/toolsift/toolsift/internal/redact"
	"github.com/toolsift/toolsift/stats"
	"github.com/toolsift/toolsift/telemetry"
	"github.com/toolsift/toolsift/upstream"
)

// Upstreams is what the proxy needs of the upstream servers; *upstream.Pool implements it.
type Upstreams interface {
	Catalog() *upstream.Catalog
	Statuses() []upstream.Status
	// WaitStarted waits for servers still on their first connection attempt and returns
	// those that are still on it when ctx ends.
	WaitStarted(ctx context.Context) []string
	Call(ctx context.Context, exposed string, args json.RawMessage, token any, progress func(json.RawMessage)) (json.RawMessage, error)
	Denied(exposed string) (serverName string, denied bool)
	// ServerOf returns the configured server an exposed name's prefix names.
	ServerOf(exposed string) (serverName string, ok bool)
	// Request sends any other request to the named server.
	Request(ctx context.Context, serverName, method string, params any) (json.RawMessage, error)
	// NeedsSignIn reports whether u must sign in to the named server for themselves before
	// calling it.
	NeedsSignIn(ctx context.Context, u identity.User, server string) bool
	// Learn connects u to the named server, signed in to per user, so that its tools are
	// known.
	Learn(ctx context.Context, u identity.User, server string) error
}

var _ Upstreams = (*upstream.Pool)(nil)

// Options configures a Server. The zero value of each field means its documented default.
type Options struct {
	// Logger receives one record per search and call; nil discards them.
	Logger *slog.Logger
	// Version is reported to clients.
	Version string
	// StartupWait caps how long tool_search and calls to unknown tools wait for servers still
	// on their first connection attempt; 0 means 10s (an npx server takes that long to start
	// even when cached). Answering from an empty catalog would tell the model that a
	// capability does not exist.
	StartupWait time.Duration
	// ListWait caps how long tool_search holds its result, after announcing newly unlocked
	// tools, for the session to re-list them; 0 means 1.5s. Clients add re-listed tools to the
	// next model request only if the re-list finished before the result arrived (see session).
	ListWait time.Duration
	// MaxCalls bounds the tool calls one session may have in flight; past it a call is an
	// isError result at once. 0 means 32. Hung calls never starve tool_search: over stdio
	// each request has a goroutine of its own (see ServeStdio).
	MaxCalls int
	// MaxUnlocked bounds the tools one session has unlocked; past it, the least recently
	// used (unlocked, matched or called) fall out of its list. 0 means 30.
	MaxUnlocked int
	// ListAllUnder, when above 0, lists every tool directly, with no tool_search or
	// call_tool, while all of them fit in that many tokens (see fitsAll).
	ListAllUnder int
	// Groups maps a group name to patterns of exposed tool names, for tool_search's
	// group:NAME; a name that is no group's is taken as a server's.
	Groups map[string][]string
	// Sampling lets an unsure tool_search ask the client's model, through MCP sampling, to
	// choose among its best candidates (search.sampling: auto); only sessions whose client
	// declared the sampling capability are asked.
	Sampling bool
	// SamplingTimeout caps the wait for that answer (the client may ask its user first);
	// past it the words stand. 0 means 30s.
	SamplingTimeout time.Duration
	// MaxRequestBytes bounds one request a stdio client sends; one over it is answered with
	// an error and never held whole. 0 means 4 MiB, as over HTTP.
	MaxRequestBytes int
	// ShutdownGrace is how long, once ServeStdio's context ends, the requests already read
	// may take to be answered; 0 means 10s.
	ShutdownGrace time.Duration
	// InputWait is how long a 2026-07-28 client's request whose upstream asked for input
	// waits for the client to come back with the answers (see bridge); 0 means 10 minutes.
	InputWait time.Duration
	// Relay, if set, lets replicas reach each other's calls that wait for a 2026-07-28
	// client's input (see bridge).
	Relay Relay
	// ForwardGrace is how long a call that forwarded notifications waits over streamable
	// HTTP or SSE, once mcp-go took them, before returning its result: nothing tells when
	// mcp-go's forwarder has written them (see mcpConn.Flush). 0 means 20ms.
	ForwardGrace time.Duration
	// Redactor masks secrets in every upstream error before a client sees it (a call's
	// result, a prompt or resource error, /readyz); nil masks only URLs and known token
	// shapes. Upstream errors can quote a URL's API key or what a server printed.
	Redactor *redact.Redactor
	// Audit, if set, gets a record of every tool call.
	Audit *audit.Log
	// Sessions, if set, keeps each session's record where every replica reads it, so that
	// a replica serves sessions another opened; SessionIdleTimeout is when one restored here
	// is forgotten here (0: 30m).
	Sessions           SessionStore
	SessionIdleTimeout time.Duration
	// Metrics, if set, counts sessions, searches and calls.
	Metrics *telemetry.Metrics
	// Stats, if set, counts what each model request carried against a direct listing,
	// searches and what followed them, and calls. The caller owns it and closes it after
	// the server.
	Stats *stats.Recorder
	// Savings ends each tool_search result with a line saying how many tools are behind it
	// and the tokens not sent (counted by Stats, so only with it).
	Savings bool
	// Habits, if set, keeps what sessions learn of their clients' habits (see habit), so
	// that the next session of a client uses it from its first search.
	Habits Habits
	// SignIn, if set, makes the links with which people sign in to the servers they act on
	// as themselves.
	SignIn SignIn
	// ConfigError, if set, is why toolsift's configuration could not be read, so that no
	// server runs: tool_search's description and every tool call say it, with its fix, so
	// the user sees it in the client rather than a closed connection.
	ConfigError string
	// Embeddings, if set, ranks tool_search's keyword queries by meaning as well as by
	// words, and is told of every catalog change to compute the tools' vectors; nil ranks
	// by words alone. The caller owns it and closes it after the server.
	Embeddings *embedding.Engine
}

// Server is the proxy's MCP server. Each of its mutexes guards one thing; see session for
// the lock order.
type Server struct {
	// Fixed at creation.
	opts Options
	log  *slog.Logger
	ups  Upstreams
	mcp  *server.MCPServer

	sessionsMu sync.Mutex // guards sessions (the map, not the sessions); taken before session.mu
	sessions   map[string]*session
	// watchers are told of sessions opening, initialized and ending (OnSessionOpen,
	// OnInitialized, OnSessionEnd): the HTTP service's accounting.
	watchers watchers

	// views holds the view of the latest catalog, and meta the forms of the meta-tools; each
	// has its own mutex, if any.
	views views
	meta  metaTools
	// finder finds tools for tool_search.
	finder *finder.Finder

	shownMu sync.Mutex // guards shown and shownDirectory
	// shown and shownDirectory are the catalog's view and the server directory that
	// sessions were last told about, to tell which sessions a change concerns.
	shown          *view
	shownDirectory string

	subscribersMu sync.Mutex // guards subscribers
	// subscribers counts the sessions subscribed to each resource URI; the upstream is
	// subscribed while the count is above zero.
	subscribers map[string]int

	// persistWarned is when a failure to save a session to the shared state was last
	// logged as a warning, in Unix nanoseconds.
	persistWarned atomic.Int64

	elicitedMu sync.Mutex // guards elicited
	// elicited maps the ID of each sign-in link sent as an elicitation to the session it
	// was sent to, until the sign-in is done (SignedIn).
	elicited map[string]string

	registerMu sync.Mutex // guards registered, and serialises registration with mcp-go
	// registered sums up the prompts, resources and templates registered with mcp-go (see
	// promptResourceKeys).
	registered [3]string

	// bridge holds the requests of 2026-07-28 clients that wait for their client's input;
	// relaying, if there is a Relay, answers other replicas for it until stopRelay is called.
	bridge    *bridge
	relaying  sync.WaitGroup
	stopRelay context.CancelFunc
	// habits records what sessions learn of their clients (see recordHabit); Close waits
	// for it.
	habits habitWriter
}

// instructions are what a client puts in its model's system prompt; a 2026-07-28 client,
// whose list never changes, is given statelessInstructions instead.
const (
	instructions = "toolsift aggregates many MCP servers. Most of their tools are hidden until you " +
		"search for them with tool_search; call what it finds through call_tool at once, or from your tool list once it appears there."
	statelessInstructions = "toolsift aggregates many MCP servers. Most of their tools are hidden until you " +
		"search for them with tool_search; call what it finds through call_tool."
)

// listTTL is how long a 2026-07-28 client may reuse a list (ttlMs).
const listTTL = time.Minute

// New returns a proxy server over ups.
func New(ups Upstreams, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StartupWait == 0 {
		opts.StartupWait = 10 * time.Second
	}
	if opts.ListWait == 0 {
		opts.ListWait = 1500 * time.Millisecond
	}
	if opts.MaxCalls == 0 {
		opts.MaxCalls = 32
	}
	if opts.SamplingTimeout == 0 {
		opts.SamplingTimeout = 30 * time.Second
	}
	if opts.MaxUnlocked == 0 {
		opts.MaxUnlocked = 30
	}
	if opts.MaxRequestBytes == 0 {
		opts.MaxRequestBytes = 4 << 20
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	if opts.ForwardGrace == 0 {
		opts.ForwardGrace = 20 * time.Millisecond
	}
	if opts.InputWait == 0 {
		opts.InputWait = 10 * time.Minute
	}
	if opts.SessionIdleTimeout == 0 {
		opts.SessionIdleTimeout = 30 * time.Minute
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, log: opts.Logger, ups: redacting{ups, opts.Redactor}, sessions: map[string]*session{}, subscribers: map[string]int{}, elicited: map[string]string{}, bridge: newBridge(opts.InputWait, opts.MaxCalls, opts.Relay, opts.Logger)}
	s.meta.broken = opts.ConfigError
	s.shown, s.shownDirectory = s.view(), searchToolDef(ups.Statuses(), opts.ConfigError).Description
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(ctx context.Context, cs server.ClientSession) {
		sess := s.session(cs.SessionID())
		sess.mu.Lock()
		sess.user = identity.FromContext(ctx)
		sess.mu.Unlock()
		s.persist(ctx, sess)
		s.opts.Metrics.SessionOpened()
		s.watchers.tell(ctx, opened, cs.SessionID())
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) {
		s.opts.Metrics.SessionEnded()
		s.endSession(cs.SessionID())
	})
	hooks.AddAfterInitialize(s.afterInitialize)
	hooks.AddAfterDiscover(func(_ context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		res.Instructions = statelessInstructions
	})
	hooks.AddAfterListTools(s.afterListTools)
	hooks.AddAfterListPrompts(s.afterListPrompts)
	hooks.AddAfterListResources(s.afterListResources)
	hooks.AddAfterListResourceTemplates(s.afterListResourceTemplates)
	// Prompts and resources are registered when the catalog changes; these catch a request
	// that arrives before that news.
	hooks.AddBeforeListPrompts(func(context.Context, any, *mcp.ListPromptsRequest) { s.syncPromptsAndResources() })
	hooks.AddBeforeGetPrompt(func(context.Context, any, *mcp.GetPromptRequest) { s.syncPromptsAndResources() })
	hooks.AddBeforeListResources(func(context.Context, any, *mcp.ListResourcesRequest) { s.syncPromptsAndResources() })
	hooks.AddBeforeListResourceTemplates(func(context.Context, any, *mcp.ListResourceTemplatesRequest) { s.syncPromptsAndResources() })
	hooks.AddBeforeReadResource(func(context.Context, any, *mcp.ReadResourceRequest) { s.syncPromptsAndResources() })
	hooks.AddBeforeSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest) {
		s.subscribe(ctx, s.sessionFrom(ctx), req.Params.URI)
	})
	hooks.AddBeforeUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest) {
		s.unsubscribe(ctx, s.sessionFrom(ctx), req.Params.URI)
	})
	hooks.AddBeforeCallTool(s.beforeCallTool)
	s.mcp = server.NewMCPServer("toolsift", opts.Version,
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithCompletions(),
		server.WithLogging(),
		server.WithPromptCompletionProvider(completer{s}),
		server.WithResourceCompletionProvider(completer{s}),
		server.WithHooks(hooks),
		server.WithRecovery(),
		// 2026-07-28 lists may be reused for a minute: a change is announced on
		// subscriptions/listen, and a client that does not listen sees it within that.
		// Private, as they vary with the caller's authorization (access rules). A read
		// resource, as any upstream's, is fetched afresh.
		server.WithMethodCacheHints(mcp.MethodToolsList, listTTL.Milliseconds(), mcp.CacheScopePrivate),
		server.WithMethodCacheHints(mcp.MethodPromptsList, listTTL.Milliseconds(), mcp.CacheScopePrivate),
		server.WithMethodCacheHints(mcp.MethodResourcesList, listTTL.Milliseconds(), mcp.CacheScopePrivate),
		server.WithMethodCacheHints(mcp.MethodResourcesTemplatesList, listTTL.Milliseconds(), mcp.CacheScopePrivate),
		server.WithInstructions(instructions),
	)
	s.mcp.AddTool(searchToolDef(nil, ""), s.handleSearch)
	s.mcp.AddTool(callToolDef(), s.handleCall)
	// Register the cached prompts and resources before any session exists: registered later,
	// when a server connects with what it had, they would be announced as a change.
	s.syncPromptsAndResources()
	// The cached catalogs' tools get their vectors from now on, not at the first change,
	// and their index is built before the first search (see finder.Options.IndexDelay).
	ctx, cancel := context.WithCancel(context.Background())
	s.stopRelay = cancel
	if opts.Relay != nil {
		s.relaying.Go(func() { opts.Relay.Serve(ctx, s.bridge.serveRelayed) })
	}
	s.finder = finder.New(s.ups, finder.Options{Logger: opts.Logger, Embeddings: opts.Embeddings,
		Groups: opts.Groups, StartupWait: opts.StartupWait})
	return s
}

// MCP returns the underlying mcp-go server, for transports.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// stable reports whether the request uses a protocol revision (2026-07-28 or later) under
// which tools/list must not vary per connection. Such clients get always-load tools and the
// meta-tools only, and reach everything else through call_tool.
func stable(ctx context.Context) bool {
	info := server.RequestProtocolInfoFromContext(ctx)
	return info != nil && info.Modern
}

// beforeCallTool routes a direct call of an upstream tool through call_tool. mcp-go only
// dispatches to tools registered with it, and upstream tools are not: they come and go with
// the upstream servers, and registering them would announce every change to every session.
func (s *Server) beforeCallTool(_ context.Context, _ any, req *mcp.CallToolRequest) {
	name := req.Params.Name
	if name == SearchTool || name == CallTool {
		return
	}
	args := req.Params.RawArguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	wrapped, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	req.Params.Name = CallTool
	req.Params.RawArguments = wrapped
	req.Params.Arguments = map[string]any{"name": name}
}

// awaitStartup waits, up to StartupWait, for servers still on their first connection
// attempt, and returns those still pending.
func (s *Server) awaitStartup(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartupWait)
	defer cancel()
	return s.ups.WaitStarted(ctx)
}

// redacting is the proxy's view of the upstreams: every error they return, on its way to a
// client, has its secrets masked. It is the one place upstream error text enters what the
// proxy answers.
type redacting struct {
	Upstreams
	r *redact.Redactor
}

func (u redacting) Statuses() []upstream.Status {
	sts := u.Upstreams.Statuses()
	for i := range sts {
		sts[i].Err = u.r.Error(sts[i].Err)
		sts[i].Stderr = u.r.String(sts[i].Stderr)
	}
	return sts
}

func (u redacting) Call(ctx context.Context, exposed string, args json.RawMessage, token any, progress func(json.RawMessage)) (json.RawMessage, error) {
	res, err := u.Upstreams.Call(ctx, exposed, args, token, progress)
	return res, u.r.Error(err)
}

func (u redacting) Request(ctx context.Context, serverName, method string, params any) (json.RawMessage, error) {
	res, err := u.Upstreams.Request(ctx, serverName, method, params)
	return res, u.r.Error(err)
}

// Close stops finding: index builds end, and a build in progress is waited for. Calls
// waiting for a 2026-07-28 client's input end. The server still answers. Close is
// idempotent.
func (s *Server) Close() error {
	s.habits.close()
	s.finder.Close()
	s.stopRelay()
	s.relaying.Wait()
	s.bridge.close()
	return nil
}

// Statuses reports the upstream servers, their errors masked (see Options.Redactor).
func (s *Server) Statuses() []upstream.Status { return s.ups.Statuses() }

// watchers holds the functions told of sessions' lives, by event.
type watchers struct {
	mu  sync.Mutex // guards fns
	fns [3][]func(ctx context.Context, id string)
}

// The events of a session's life.
const (
	opened = iota
	initialized
	ended
)

func (w *watchers) add(event int, f func(ctx context.Context, id string)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fns[event] = append(w.fns[event], f)
}

func (w *watchers) tell(ctx context.Context, event int, id string) {
	w.mu.Lock()
	fns := w.fns[event]
	w.mu.Unlock()
	for _, f := range fns {
		f(ctx, id)
	}
}

// OnSessionOpen registers f to be called with the ID of each session as mcp-go registers
// it, in the context of the request that opened it.
func (s *Server) OnSessionOpen(f func(ctx context.Context, id string)) { s.watchers.add(opened, f) }

// OnInitialized registers f to be called, in the request's context, for each initialize
// that succeeded.
func (s *Server) OnInitialized(f func(ctx context.Context)) {
	s.watchers.add(initialized, func(ctx context.Context, _ string) { f(ctx) })
}

// OnSessionEnd registers f to be called with the ID of each session that ends: its client
// sent DELETE, it idled past the timeout, or stdio ended.
func (s *Server) OnSessionEnd(f func(id string)) {
	s.watchers.add(ended, func(_ context.Context, id string) { f(id) })
}

// Refused returns why a request is refused before any session sees it, or "": the
// 2026-07-28 probe, server/discover, of a client that also speaks 2025-11-25 and serves its
// users better there (habit.sessions). That revision drops sessions, and with them tools
// unlocked into the client's own list; such a client takes the error as its cue to
// initialize at 2025-11-25 instead. Every other client is answered, and served on
// 2026-07-28 (see stable).
func (s *Server) Refused(msg jsonrpc.Message) string {
	if msg.Method != string(mcp.MethodServerDiscover) {
		return ""
	}
	var p struct {
		Meta struct {
			ClientInfo struct {
				Name string `json:"name"`
			} `json:"io.modelcontextprotocol/clientInfo"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	if !habits[p.Meta.ClientInfo.Name].sessions {
		return ""
	}
	return "server/discover is not served to " + p.Meta.ClientInfo.Name + ": toolsift unlocks tools into its own list per session, so initialize with protocol 2025-11-25"
}
