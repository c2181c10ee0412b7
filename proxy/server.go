// Package proxy is the MCP server clients talk to. It owns client sessions and what each one
// sees: the always-load tools, tool_search and call_tool, then the tools it unlocked.
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/search"
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
	// Request sends any other request to the named server.
	Request(ctx context.Context, serverName, method string, params any) (json.RawMessage, error)
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
	// next model request only if the re-list finished before the result arrived.
	ListWait time.Duration
}

// Server is the proxy's MCP server.
type Server struct {
	opts Options
	log  *slog.Logger
	ups  Upstreams
	mcp  *server.MCPServer

	mu       sync.Mutex // guards sessions, lists, subscribers, index and indexed
	sessions map[string]*session
	// subscribers counts the sessions subscribed to each resource URI; the upstream is
	// subscribed while the count is above zero.
	subscribers map[string]int
	// shown and shownDirectory are the catalog and server directory that sessions were
	// last told about, to tell which sessions a change concerns.
	shown          *upstream.Catalog
	shownDirectory string
	// lists maps the JSON id of a tools/list request whose response is still being written
	// to the session that sent it (watched sessions only).
	lists   map[string]pendingList
	index   *search.Index
	indexed *upstream.Catalog // the catalog index was built from

	extrasMu sync.Mutex // guards extrasKeys, and serialises registration with mcp-go
	// extrasKeys sum up the registered prompts, resources and templates (see extrasKeys).
	extrasKeys [3]string
}

// session is one client session's view.
type session struct {
	id string

	mu sync.Mutex // guards the fields below
	// unlocked holds exposed names in unlock order; the list only grows, so the prefix of
	// tools/list stays stable for prompt caches.
	unlocked []string
	isOpen   map[string]bool
	// listed is closed, and replaced, whenever the session has listed tools that include
	// every unlock so far: when the response has been written, for a watched session;
	// otherwise when it has been built.
	listed chan struct{}
	// version counts the session's unlocks; a list built before the latest does not count
	// as the re-list a waiting tool_search wants.
	version int
	// watched is set for sessions whose transport reports written responses (stdio).
	watched bool
	// relists is false once the client let a list_changed go unanswered, so that clients
	// that ignore the notification are not made to wait on every search.
	relists bool
	// subs holds the resource URIs the session subscribed to.
	subs map[string]bool
}

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
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, log: opts.Logger, ups: ups, sessions: map[string]*session{}, lists: map[string]pendingList{}, subscribers: map[string]int{},
		shown: ups.Catalog(), shownDirectory: searchToolDef(ups.Statuses()).Description}
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) { s.session(cs.SessionID()) })
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.endSession(cs.SessionID()) })
	hooks.AddOnRequestInitialization(refuseDiscover)
	hooks.AddAfterListTools(s.afterListTools)
	// Prompts and resources are registered when the catalog changes; these catch a request
	// that arrives before that news.
	hooks.AddBeforeListPrompts(func(context.Context, any, *mcp.ListPromptsRequest) { s.syncExtras() })
	hooks.AddBeforeGetPrompt(func(context.Context, any, *mcp.GetPromptRequest) { s.syncExtras() })
	hooks.AddBeforeListResources(func(context.Context, any, *mcp.ListResourcesRequest) { s.syncExtras() })
	hooks.AddBeforeListResourceTemplates(func(context.Context, any, *mcp.ListResourceTemplatesRequest) { s.syncExtras() })
	hooks.AddBeforeReadResource(func(context.Context, any, *mcp.ReadResourceRequest) { s.syncExtras() })
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
		server.WithInstructions("toolsift aggregates many MCP servers. Most of their tools are hidden until you "+
			"search for them with tool_search; call what it finds directly or through call_tool."),
	)
	s.mcp.AddTool(searchToolDef(nil), s.handleSearch)
	s.mcp.AddTool(callToolDef(), s.handleCall)
	return s
}

// MCP returns the underlying mcp-go server, for transports.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// ServeStdio serves one client over in and out until in ends or ctx is done. Only JSON-RPC
// is written to out.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		sess := s.sessionFrom(ctx)
		sess.mu.Lock()
		sess.watched = true
		sess.mu.Unlock()
		return ctx
	})
	err := stdio.Listen(ctx, in, &responseWatcher{w: out, s: s})
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (s *Server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		sess = &session{id: id, isOpen: map[string]bool{}, listed: make(chan struct{}), relists: true, subs: map[string]bool{}}
		s.sessions[id] = sess
	}
	return sess
}

// endSession forgets a session's state: mcp-go unregisters a session when its client sends
// DELETE, when it idles past the timeout, or when stdio ends.
func (s *Server) endSession(id string) {
	s.mu.Lock()
	sess := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if sess == nil {
		return
	}
	sess.mu.Lock()
	uris := make([]string, 0, len(sess.subs))
	for uri := range sess.subs {
		uris = append(uris, uri)
	}
	sess.mu.Unlock()
	for _, uri := range uris {
		s.unsubscribe(context.Background(), sess, uri)
	}
}

func (s *Server) sessionFrom(ctx context.Context) *session {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return s.session(cs.SessionID())
	}
	return &session{isOpen: map[string]bool{}, listed: make(chan struct{})}
}

// refuseDiscover answers server/discover, the 2026-07-28 probe, with an error. That revision
// drops sessions, so per-session tool lists would be invalid under it; clients that speak both
// (Claude Code among them) take the error as a cue to initialize at 2025-11-25 instead.
func refuseDiscover(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(raw, &m) == nil && m.Method == string(mcp.MethodServerDiscover) {
		return errors.New("server/discover is not supported: toolsift keeps per-session tool lists, so initialize with protocol 2025-11-25 or older")
	}
	return nil
}

// stable reports whether the request uses a protocol revision (2026-07-28 or later) under
// which tools/list must not vary per connection. Such clients get always-load tools and the
// meta-tools only, and reach everything else through call_tool.
func stable(ctx context.Context) bool {
	info := server.RequestProtocolInfoFromContext(ctx)
	return info != nil && info.Modern
}

// afterListTools replaces mcp-go's list with the session's own: always-load tools,
// tool_search, call_tool, then unlocked tools in unlock order.
func (s *Server) afterListTools(ctx context.Context, id any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
	sess := s.sessionFrom(ctx)
	cat := s.ups.Catalog()
	var tools []mcp.Tool
	for _, t := range cat.Tools {
		if t.AlwaysLoad {
			tools = append(tools, exposedTool(t))
		}
	}
	tools = append(tools, searchToolDef(s.ups.Statuses()), callToolDef())
	sess.mu.Lock()
	if !stable(ctx) {
		for _, name := range sess.unlocked {
			if t, ok := cat.Lookup(name); ok && !t.AlwaysLoad {
				tools = append(tools, exposedTool(t))
			}
		}
	}
	watched, version := sess.watched, sess.version
	sess.mu.Unlock()
	result.Tools = tools
	if !watched {
		sess.markListed(version)
		return
	}
	key, _ := json.Marshal(id)
	s.mu.Lock()
	s.lists[string(key)] = pendingList{sess, version}
	s.mu.Unlock()
}

// pendingList is a tools/list response being written: whose, and with which unlocks.
type pendingList struct {
	sess    *session
	version int
}

// markListed wakes whoever waits for the session to re-list, if the list, built at version,
// has every unlock so far.
func (sess *session) markListed(version int) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.relists = true
	if version < sess.version {
		return
	}
	close(sess.listed)
	sess.listed = make(chan struct{})
}

// responseWatcher passes a transport's output through and reports each tools/list response
// once it has been written. A client adds re-listed tools to its next model request only if
// the re-list finished before the tool_search result arrived, and the two responses are
// written by different goroutines.
type responseWatcher struct {
	w io.Writer
	s *Server
}

func (rw *responseWatcher) Write(p []byte) (int, error) {
	n, err := rw.w.Write(p)
	if bytes.Contains(p, []byte(`"tools":[`)) {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(p, &m) == nil && len(m.ID) > 0 {
			rw.s.mu.Lock()
			pl, ok := rw.s.lists[string(m.ID)]
			delete(rw.s.lists, string(m.ID))
			rw.s.mu.Unlock()
			if ok {
				pl.sess.markListed(pl.version)
			}
		}
	}
	return n, err
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

// unlock makes names visible to sess and reports those that were not visible before.
func (s *Server) unlock(sess *session, cat *upstream.Catalog, names []string) []string {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var added []string
	for _, n := range names {
		t, ok := cat.Lookup(n)
		if !ok || t.AlwaysLoad || sess.isOpen[n] {
			continue
		}
		sess.isOpen[n] = true
		sess.unlocked = append(sess.unlocked, n)
		added = append(added, n)
	}
	if len(added) > 0 {
		sess.version++
	}
	return added
}

// announce tells the session its tool list changed. With wait, it then holds until the
// session re-lists (up to ListWait), sending the notification a second time halfway in case
// the first was lost.
func (s *Server) announce(ctx context.Context, sess *session, wait bool) {
	sess.mu.Lock()
	listed, relists := sess.listed, sess.relists
	sess.mu.Unlock()
	s.notifyListChanged(ctx, sess)
	if !wait || !relists {
		return
	}
	half := time.NewTimer(s.opts.ListWait / 2)
	defer half.Stop()
	select {
	case <-listed:
		return
	case <-ctx.Done():
		return
	case <-half.C:
		s.notifyListChanged(ctx, sess)
	}
	rest := time.NewTimer(s.opts.ListWait - s.opts.ListWait/2)
	defer rest.Stop()
	select {
	case <-listed:
	case <-ctx.Done():
	case <-rest.C:
		sess.mu.Lock()
		if sess.listed == listed {
			sess.relists = false
		}
		sess.mu.Unlock()
	}
}

// notifyListChanged sends list_changed through the request's own session: over streamable
// HTTP a client that holds no GET stream has only the POST stream of its current request.
func (s *Server) notifyListChanged(ctx context.Context, sess *session) {
	method := string(mcp.MethodNotificationToolsListChanged)
	err := s.mcp.SendNotificationToClient(ctx, method, nil)
	if err != nil && sess.id != "" {
		err = s.mcp.SendNotificationToSpecificClient(sess.id, method, nil)
	}
	if err != nil {
		s.log.Warn("list_changed not sent", "session", sess.id, "error", err)
	}
}

// searchIndex returns an index of the current catalog, rebuilding it after a change.
func (s *Server) searchIndex() (*search.Index, *upstream.Catalog) {
	cat := s.ups.Catalog()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexed != cat {
		s.index, s.indexed = NewIndex(cat), cat
	}
	return s.index, s.indexed
}

// NewIndex builds the search index of a catalog.
func NewIndex(cat *upstream.Catalog) *search.Index {
	docs := make([]search.Doc, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		docs = append(docs, Doc(t))
	}
	return search.NewIndex(docs)
}

// Doc converts an upstream tool to a search document.
func Doc(t upstream.Tool) search.Doc {
	return search.Doc{
		Name: t.Exposed, Tool: t.Name, Server: t.Server, Description: t.Description,
		Keywords: t.Keywords, Params: search.ParamsFromSchema(t.InputSchema),
	}
}

// awaitStartup waits, up to StartupWait, for servers still on their first connection
// attempt, and returns those still pending.
func (s *Server) awaitStartup(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartupWait)
	defer cancel()
	return s.ups.WaitStarted(ctx)
}
