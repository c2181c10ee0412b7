// Package upstream connects to the configured MCP servers and keeps a catalog of their
// tools. It knows nothing about client sessions.
package upstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/config"
)

// Tool is one upstream tool, kept as the server sent it.
type Tool struct {
	// Server is the configured server's name; Name is the tool's name there.
	Server string
	Name   string
	// Exposed is the name clients see (see ExposedName).
	Exposed     string
	Title       string
	Description string
	// InputSchema, OutputSchema, Annotations, Meta, Icons and Execution are the raw JSON of
	// the tool's fields of those names (inputSchema, outputSchema, annotations, _meta, icons,
	// execution); absent fields are nil.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Meta         json.RawMessage
	Icons        json.RawMessage
	Execution    json.RawMessage
	// Keywords are extra search terms from the configuration.
	Keywords []string
	// AlwaysLoad is set when the configuration or the tool's own
	// _meta["anthropic/alwaysLoad"] asks for it to be shown to every session.
	AlwaysLoad bool
}

// ParseTool decodes one tool of a tools/list result.
func ParseTool(raw json.RawMessage) (Tool, error) {
	var t struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
		Meta         json.RawMessage `json:"_meta"`
		Icons        json.RawMessage `json:"icons"`
		Execution    json.RawMessage `json:"execution"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return Tool{}, err
	}
	if t.Name == "" {
		return Tool{}, errors.New("tool without a name")
	}
	var meta struct {
		AlwaysLoad bool `json:"anthropic/alwaysLoad"`
	}
	if len(t.Meta) > 0 {
		_ = json.Unmarshal(t.Meta, &meta)
	}
	return Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: objectSchema(t.InputSchema), OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Meta: t.Meta, Icons: t.Icons, Execution: t.Execution,
		AlwaysLoad: meta.AlwaysLoad,
	}, nil
}

// objectSchema returns an input schema that says "type": "object", as MCP requires of one:
// Claude Code drops a server's whole tool list over a single schema without it (gitlab's
// lack it), which behind toolsift would take tool_search with it. A schema that says it, or
// says another type, or is not a JSON object, is kept byte for byte.
func objectSchema(s json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(s, &fields) != nil || fields == nil {
		return s
	}
	if _, ok := fields["type"]; ok {
		return s
	}
	rest := bytes.TrimLeft(bytes.TrimSpace(s)[1:], " \t\r\n")
	if rest[0] == '}' {
		return json.RawMessage(`{"type":"object"}`)
	}
	return append(json.RawMessage(`{"type":"object",`), rest...)
}

// State is where a server's connection stands.
type State string

// Server states.
const (
	StateStarting  State = "starting"
	StateConnected State = "connected"
	StateFailed    State = "failed"
	StateDisabled  State = "disabled"
	// StateIdle is a server that is not running, by design (lazyStart, idleTimeout): its
	// cached tools are listed and searched, and a call starts it.
	StateIdle State = "idle"
)

// Usable reports whether the server's tools can be called now or after an on-demand start.
func (st State) Usable() bool { return st == StateConnected || st == StateIdle }

// Status describes one configured server.
type Status struct {
	Name    string
	State   State
	Tools   int
	Summary string
	// Err is the last connection error, if any.
	Err error
	// Cached is when the server's cached catalog was saved; zero if there is none.
	Cached time.Time
}

// Options configures a Pool. The zero value of each field means its documented default.
type Options struct {
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Dial connects to a server; nil means Dialer(Version).
	Dial DialFunc
	// Version is toolsift's version, sent to servers when connecting.
	Version string
	// OnChange is called, outside any lock, after the catalog changes.
	OnChange func()
	// ConnectTimeout bounds one connection attempt including the first tools/list, for
	// servers without a startupTimeout; 0 means 60s, since npx may download the server first.
	ConnectTimeout time.Duration
	// RetryMin and RetryMax bound the back-off between failed attempts; 0 means 1s and 60s.
	RetryMin, RetryMax time.Duration
	// CallTimeout bounds one tool call, for servers without a callTimeout, including any
	// wait for the server to come back; 0 means 120s. A server that stops answering must
	// become an error result, not a call that hangs.
	CallTimeout time.Duration
	// PingTimeout bounds the ping that checks a server after a call to it timed out; one
	// that does not answer is restarted. 0 means 5s.
	PingTimeout time.Duration
	// Client answers servers' sampling and elicitation requests and takes their log
	// messages; nil means servers are told the client cannot sample or elicit.
	Client Client
	// MaxStarting bounds how many stdio servers start at once; 0 means 8. Forty npx
	// servers started together compete for CPU and memory, and none is ready sooner for
	// it; HTTP and SSE servers cost nothing here to connect and are not held back.
	MaxStarting int
	// CachedStartDelay holds back the start of servers whose catalog came from the cache:
	// they have nothing urgent to do, and starting them at once would have them compete
	// with the client's first requests for the CPU. A call to one starts it at once. 0
	// means 1s; negative means no delay.
	CachedStartDelay time.Duration
	// CacheDir keeps each server's last catalog, so that a restart serves it at once while
	// the server starts; empty means no cache.
	CacheDir string
}

// Pool holds one connection per enabled server and the catalog of their tools.
type Pool struct {
	opts    Options
	log     *slog.Logger
	servers []*server // fixed at creation, in configuration order
	byName  map[string]*server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the servers' connection loops

	// starting holds a token for each connection attempt under way (see MaxStarting).
	starting chan struct{}

	// rebuildMu serializes building and storing the catalog: two servers that connect at
	// once each build one, and the older build must not be stored last.
	rebuildMu sync.Mutex
	catalog   atomic.Pointer[Catalog]
	nextTok   atomic.Int64
	// progress maps a progress token sent upstream to the caller's handler.
	progress sync.Map // string → func(json.RawMessage)
	closed   sync.Once
}

type server struct {
	cfg    config.Server
	log    *slog.Logger
	stderr *Tail
	// attempted is closed when the first connection attempt has ended either way, or at
	// once when the cache has the server's catalog.
	attempted     chan struct{}
	attemptedOnce sync.Once
	// relist wakes the connection loop: the server changed its lists.
	relist chan struct{}
	// trouble wakes the connection loop: a call found the connection gone or unanswering.
	trouble chan trouble
	// wake asks the connection loop for a connection now: a caller is waiting.
	wake chan struct{}

	mu        sync.Mutex        // guards the fields below
	callers   []context.Context // requests in flight, oldest first
	lastUsed  time.Time         // when a request last started or ended
	subs      map[string]bool   // URIs of the resource subscriptions held upstream
	conn      Conn
	info      Info
	state     State
	lastErr   error
	failures  int // connection attempts that failed, ever
	connects  int // connections made, ever
	summary   string
	tools     []Tool
	prompts   []Prompt
	resources []Resource
	cached    time.Time // when the cache entry in use was written; zero without one
	// changed is closed, and replaced, whenever state, conn or failures change.
	changed chan struct{}
}

// trouble is what a call found wrong with a connection. It names the connection, since by
// the time the loop reads it that one may have been replaced.
type trouble struct {
	conn Conn
	// lost: the connection is gone; otherwise a call got no answer in time and a ping
	// should tell whether the server still answers.
	lost bool
}

// errIdle ends a connection that had no request for the server's idleTimeout.
var errIdle = errors.New("idle")

// setLocked moves the server to state, with conn as its connection, and wakes whoever
// waits for a change. s.mu must be held.
func (s *server) setLocked(state State, conn Conn) {
	s.state, s.conn = state, conn
	close(s.changed)
	s.changed = make(chan struct{})
}

// demand asks the connection loop to connect now, if it is not already connected.
func (s *server) demand() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *server) startupTimeout(p *Pool) time.Duration {
	return cmp.Or(s.cfg.StartupTimeout, p.opts.ConnectTimeout)
}

func (s *server) callTimeout(p *Pool) time.Duration {
	return cmp.Or(s.cfg.CallTimeout, p.opts.CallTimeout)
}

// NewPool returns a pool for the given servers. Call Start to connect.
func NewPool(servers []config.Server, opts Options) *Pool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Dial == nil {
		opts.Dial = Dialer(opts.Version)
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 60 * time.Second
	}
	if opts.RetryMin == 0 {
		opts.RetryMin = time.Second
	}
	if opts.RetryMax == 0 {
		opts.RetryMax = time.Minute
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 2 * time.Minute
	}
	if opts.CachedStartDelay == 0 {
		opts.CachedStartDelay = time.Second
	}
	if opts.MaxStarting == 0 {
		opts.MaxStarting = 8
	}
	if opts.PingTimeout == 0 {
		opts.PingTimeout = 5 * time.Second
	}
	p := &Pool{opts: opts, log: opts.Logger, byName: map[string]*server{}, starting: make(chan struct{}, opts.MaxStarting)}
	for _, cfg := range servers {
		s := &server{
			cfg:       cfg,
			log:       p.log.With("upstream", cfg.Name),
			stderr:    NewTail(2048),
			attempted: make(chan struct{}),
			relist:    make(chan struct{}, 1),
			trouble:   make(chan trouble, 1),
			wake:      make(chan struct{}, 1),
			state:     StateStarting,
			changed:   make(chan struct{}),
		}
		if cfg.Disabled {
			s.state = StateDisabled
			s.attemptedOnce.Do(func() { close(s.attempted) })
		}
		p.servers = append(p.servers, s)
		p.byName[cfg.Name] = s
	}
	if opts.CacheDir != "" {
		// Decoding forty cached catalogs is most of toolsift's start-up time: spread it.
		var wg sync.WaitGroup
		for _, s := range p.servers {
			if !s.cfg.Disabled {
				wg.Go(func() { p.loadCached(s) })
			}
		}
		wg.Wait()
	}
	for _, s := range p.servers {
		if s.cfg.LazyStart && !s.cached.IsZero() {
			s.state = StateIdle
		}
	}
	p.catalog.Store(p.buildCatalog())
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Start connects to every enabled server concurrently, in the background. Servers that fail
// are retried with back-off until Close.
func (p *Pool) Start() {
	for _, s := range p.servers {
		if s.cfg.Disabled {
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.run(s)
		}()
	}
}

// Close stops every server and waits for the connection loops to end. It is idempotent.
func (p *Pool) Close() error {
	p.closed.Do(func() {
		p.cancel()
		p.wg.Wait()
	})
	return nil
}

// run owns one server's connection: connect, list, wait for trouble, repeat. A server
// that is idle (lazyStart, idleTimeout) is started when a caller asks for it.
func (p *Pool) run(s *server) {
	s.mu.Lock()
	hold := s.state == StateStarting && !s.cached.IsZero() && p.opts.CachedStartDelay > 0
	s.mu.Unlock()
	if hold {
		t := time.NewTimer(p.opts.CachedStartDelay)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		}
	}
	backoff := p.opts.RetryMin
	for {
		s.mu.Lock()
		idle := s.state == StateIdle
		s.mu.Unlock()
		if idle {
			select {
			case <-p.ctx.Done():
				return
			case <-s.wake:
			}
			s.mu.Lock()
			s.setLocked(StateStarting, nil)
			s.mu.Unlock()
			s.log.Info("upstream starting on demand")
		}
		err := p.connect(s)
		if err != nil && p.ctx.Err() == nil {
			if why := explain(s.stderr.String()); why != "" {
				err = fmt.Errorf("%w; stderr: %s", err, why)
			}
		}
		s.attemptedOnce.Do(func() { close(s.attempted) })
		if err == nil {
			backoff = p.opts.RetryMin
			err = p.serve(s)
		}
		if p.ctx.Err() != nil {
			p.disconnect(s, nil, StateFailed)
			return
		}
		if errors.Is(err, errIdle) {
			p.disconnect(s, nil, StateIdle)
			s.log.Info("upstream stopped while idle", "idle_timeout", s.cfg.IdleTimeout.String())
			continue
		}
		p.disconnect(s, err, StateFailed)
		// Jitter keeps many servers that failed together from retrying together.
		wait := backoff/2 + rand.N(backoff/2+1)
		s.log.Warn("upstream unavailable", "error", err, "retry_in", wait.Round(time.Millisecond).String(), "stderr", s.stderr.String())
		if !p.pause(s, wait) {
			return
		}
		backoff = min(backoff*2, p.opts.RetryMax)
	}
}

// pause waits before the next connection attempt: wait, or less when a caller is waiting
// for the server, though never less than RetryMin, so a crash loop is never a busy loop. It
// reports false when the pool is closing.
func (p *Pool) pause(s *server, wait time.Duration) bool {
	start := time.Now()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-p.ctx.Done():
		return false
	case <-t.C:
		return true
	case <-s.wake:
	}
	t.Reset(min(wait, p.opts.RetryMin) - time.Since(start))
	select {
	case <-p.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connect makes one connection attempt and lists the server's tools.
func (p *Pool) connect(s *server) error {
	if s.cfg.Type == config.TypeStdio {
		select {
		case p.starting <- struct{}{}:
			defer func() { <-p.starting }()
		case <-p.ctx.Done():
			return p.ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, s.startupTimeout(p))
	defer cancel()
	start := time.Now()
	s.stderr.Reset()
	var peer Peer
	if p.opts.Client != nil {
		peer = serverClient{p, s}
	}
	conn, info, err := p.opts.Dial(ctx, s.cfg, s.stderr, func(method string, params json.RawMessage) {
		p.notified(s, method, params)
	}, peer)
	timedOut := func(err error) error {
		if ctx.Err() == context.DeadlineExceeded && p.ctx.Err() == nil {
			return fmt.Errorf("not started within %v (startupTimeout): %w", s.startupTimeout(p), err)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("connecting: %w", timedOut(err))
	}
	tools, raws, err := p.list(ctx, s, conn)
	if err != nil {
		_ = conn.Close()
		return timedOut(err)
	}
	prompts, resources := p.listExtras(ctx, s, conn, info)
	p.save(s, info, raws, prompts, resources)
	p.resubscribe(ctx, s, conn)
	if info.Logging && p.opts.Client != nil {
		// Ask for every message: each client session gets those at or above the level it
		// set, and a server's default would hide them from all.
		if _, err := conn.Request(ctx, "logging/setLevel", map[string]string{"level": "debug"}); err != nil {
			s.log.Debug("upstream logging level not set", "error", err)
		}
	}
	// A caller's demand made while the server was down is met now; left over, it would
	// start the server again the next time it goes idle.
	select {
	case <-s.wake:
	default:
	}
	s.mu.Lock()
	s.info, s.lastErr, s.summary, s.lastUsed = info, nil, info.Summary, time.Now()
	s.connects++
	restarts := s.connects - 1
	s.tools, s.prompts, s.resources = tools, prompts, resources
	s.setLocked(StateConnected, conn)
	s.mu.Unlock()
	s.log.Info("upstream connected", "tools", len(tools), "duration_ms", time.Since(start).Milliseconds(), "restarts", restarts)
	p.rebuild()
	return nil
}

// resubscribe renews, on a new connection, the resource subscriptions clients hold: the
// server that crashed or was stopped when idle has forgotten them.
func (p *Pool) resubscribe(ctx context.Context, s *server, conn Conn) {
	s.mu.Lock()
	uris := slices.Sorted(maps.Keys(s.subs))
	s.mu.Unlock()
	for _, uri := range uris {
		if _, err := conn.Request(ctx, "resources/subscribe", map[string]string{"uri": uri}); err != nil {
			s.log.Warn("resource subscription not renewed", "uri", uri, "error", err)
		}
	}
}

// list fetches and filters a server's tools.
func (p *Pool) list(ctx context.Context, s *server, conn Conn) ([]Tool, []json.RawMessage, error) {
	raws, err := listPages(ctx, conn, "tools/list", "tools")
	if err != nil {
		return nil, nil, fmt.Errorf("listing tools: %w", err)
	}
	return s.toolsFrom(raws), raws, nil
}

// toolsFrom turns a server's raw tools into catalog tools, applying its configuration.
func (s *server) toolsFrom(raws []json.RawMessage) []Tool {
	tools := make([]Tool, 0, len(raws))
	for _, raw := range raws {
		t, err := ParseTool(raw)
		if err != nil {
			s.log.Warn("upstream tool skipped", "error", err)
			continue
		}
		if !s.cfg.Allowed(t.Name) {
			continue
		}
		t.Server = s.cfg.Name
		t.AlwaysLoad = t.AlwaysLoad || s.cfg.AlwaysLoaded(t.Name)
		if o, ok := s.cfg.Tools[t.Name]; ok {
			t.Keywords = o.Keywords
			if o.Description != "" {
				t.Description = o.Description
			}
		}
		tools = append(tools, t)
	}
	return tools
}

// serve waits while the connection is healthy, re-listing when the server says its tools
// changed. It returns why the connection ended: errIdle when the server had no request for
// its idleTimeout.
func (p *Pool) serve(s *server) error {
	s.mu.Lock()
	conn, info := s.conn, s.info
	s.mu.Unlock()
	var idle <-chan time.Time
	if d := s.cfg.IdleTimeout; d > 0 {
		idle = time.After(d)
	}
	for {
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-conn.Lost():
			return lostReason(conn)
		case <-idle:
			left := s.stopIfIdle()
			if left > 0 {
				idle = time.After(left)
				continue
			}
			if err := conn.Close(); err != nil {
				s.log.Debug("upstream close", "error", err)
			}
			return errIdle
		case tr := <-s.trouble:
			if tr.conn != conn {
				continue
			}
			if tr.lost {
				return lostReason(conn)
			}
			ctx, cancel := context.WithTimeout(p.ctx, p.opts.PingTimeout)
			_, err := conn.Request(ctx, "ping", nil)
			cancel()
			// An error answer is still an answer.
			var rpcErr *RPCError
			if err != nil && !errors.As(err, &rpcErr) && p.ctx.Err() == nil {
				return fmt.Errorf("stopped answering: a call timed out and ping failed: %w", err)
			}
		case <-s.relist:
			ctx, cancel := context.WithTimeout(p.ctx, s.startupTimeout(p))
			tools, raws, err := p.list(ctx, s, conn)
			prompts, resources := p.listExtras(ctx, s, conn, info)
			cancel()
			if err != nil {
				return err
			}
			p.save(s, info, raws, prompts, resources)
			s.mu.Lock()
			s.tools, s.prompts, s.resources = tools, prompts, resources
			s.mu.Unlock()
			s.log.Info("upstream tools changed", "tools", len(tools))
			p.rebuild()
		}
	}
}

// stopIfIdle takes the connection away from callers, leaving the server idle, if it has
// been unused for its idleTimeout; if not, it returns how long until it may be. A server
// with a request in flight, or a resource subscription to keep, is never idle.
func (s *server) stopIfIdle() (left time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.callers) > 0 || len(s.subs) > 0 {
		return s.cfg.IdleTimeout
	}
	if left := time.Until(s.lastUsed.Add(s.cfg.IdleTimeout)); left > 0 {
		return left
	}
	s.setLocked(StateIdle, nil)
	return 0
}

// lostReason says why a connection went away by itself.
func lostReason(conn Conn) error {
	if err := conn.Err(); err != nil {
		return err
	}
	return ErrClosed
}

// disconnect closes a server's connection, leaving it in state, and records why.
func (p *Pool) disconnect(s *server, why error, state State) {
	s.mu.Lock()
	conn := s.conn
	if why != nil {
		s.lastErr = why
		if conn == nil {
			s.failures++
		}
	}
	if s.state != StateDisabled {
		s.setLocked(state, nil)
	}
	s.mu.Unlock()
	if conn != nil {
		if err := conn.Close(); err != nil {
			s.log.Debug("upstream close", "error", err)
		}
	}
}

// report tells s's connection loop what a call found wrong with conn. A lost connection
// replaces a pending probe; a probe never replaces anything.
func (s *server) report(tr trouble) {
	for {
		select {
		case s.trouble <- tr:
			return
		default:
		}
		if !tr.lost {
			return
		}
		select {
		case <-s.trouble:
		default:
		}
	}
}

// notified handles a notification from a server.
func (p *Pool) notified(s *server, method string, params json.RawMessage) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		select {
		case s.relist <- struct{}{}:
		default:
		}
	case "notifications/resources/updated":
		if p.opts.Client != nil {
			p.opts.Client.ResourceUpdated(params)
		}
	case "notifications/message":
		if caller := s.caller(); caller != nil && p.opts.Client != nil {
			p.opts.Client.Log(caller, params)
		}
	case "notifications/progress":
		var prog struct {
			Token any `json:"progressToken"`
		}
		if json.Unmarshal(params, &prog) != nil {
			return
		}
		tok, ok := prog.Token.(string)
		if !ok {
			return
		}
		if h, ok := p.progress.Load(tok); ok {
			h.(func(json.RawMessage))(params)
		}
	}
}

// rebuild replaces the catalog from the servers' current tools and reports the change.
func (p *Pool) rebuild() {
	p.rebuildMu.Lock()
	p.catalog.Store(p.buildCatalog())
	p.rebuildMu.Unlock()
	if p.opts.OnChange != nil {
		p.opts.OnChange()
	}
}

// buildCatalog makes a catalog of the servers' current tools, prompts and resources.
func (p *Pool) buildCatalog() *Catalog {
	var lists [][]Tool
	var prompts []Prompt
	var resources []Resource
	for _, s := range p.servers {
		s.mu.Lock()
		lists = append(lists, s.tools)
		for _, pr := range s.prompts {
			pr.Exposed = ExposedName(s.cfg.Prefix, pr.Name)
			prompts = append(prompts, pr)
		}
		resources = append(resources, s.resources...)
		s.mu.Unlock()
	}
	cat := NewCatalog(p.prefixed(lists))
	cat.Prompts, cat.Resources = prompts, resources
	return cat
}

// loadCached fills a server's catalog from the cache, if it has the server's current launch
// configuration, and lets searches go ahead without waiting for the server.
func (p *Pool) loadCached(s *server) {
	e, err := loadCache(p.opts.CacheDir, s.cfg)
	if err != nil {
		if !os.IsNotExist(err) {
			s.log.Warn("catalog cache unreadable", "error", err)
		}
		return
	}
	s.tools, s.prompts, s.resources = s.toolsFrom(e.Tools), s.promptsFrom(e.Prompts), e.Resources
	s.info, s.summary, s.cached = e.Info, e.Info.Summary, e.Saved
	s.attemptedOnce.Do(func() { close(s.attempted) })
	s.log.Debug("catalog from cache", "tools", len(s.tools), "saved", e.Saved)
}

// save replaces a server's cache entry with what it just listed.
func (p *Pool) save(s *server, info Info, tools []json.RawMessage, prompts []Prompt, resources []Resource) {
	if p.opts.CacheDir == "" {
		return
	}
	e := &cacheEntry{Server: s.cfg.Name, Saved: time.Now().UTC(), Info: info, Tools: tools, Resources: resources}
	for _, pr := range prompts {
		e.Prompts = append(e.Prompts, pr.Raw)
	}
	if err := saveCache(p.opts.CacheDir, s.cfg, e); err != nil {
		s.log.Warn("catalog cache not written", "error", err)
		return
	}
	s.mu.Lock()
	s.cached = e.Saved
	s.mu.Unlock()
}

// prefixed flattens per-server tool lists, setting exposed names.
func (p *Pool) prefixed(lists [][]Tool) []Tool {
	var all []Tool
	for i, tools := range lists {
		prefix := p.servers[i].cfg.Prefix
		for _, t := range tools {
			t.Exposed = ExposedName(prefix, t.Name)
			all = append(all, t)
		}
	}
	return all
}

// Catalog returns the current catalog. It is immutable; later changes make a new one.
func (p *Pool) Catalog() *Catalog { return p.catalog.Load() }

// Statuses reports every configured server, in configuration order.
func (p *Pool) Statuses() []Status {
	out := make([]Status, 0, len(p.servers))
	for _, s := range p.servers {
		s.mu.Lock()
		st := Status{Name: s.cfg.Name, State: s.state, Tools: len(s.tools), Summary: s.summary, Err: s.lastErr, Cached: s.cached}
		if s.cfg.Description != "" {
			st.Summary = s.cfg.Description
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// WaitStarted blocks until every server has finished its first connection attempt, or ctx
// ends. It returns the names of servers still on their first attempt.
func (p *Pool) WaitStarted(ctx context.Context) (pending []string) {
	for _, s := range p.servers {
		select {
		case <-s.attempted:
		case <-ctx.Done():
		}
	}
	for _, s := range p.servers {
		select {
		case <-s.attempted:
		default:
			pending = append(pending, s.cfg.Name)
		}
	}
	return pending
}

// Call invokes the tool with the given exposed name. args is sent as the raw arguments JSON.
// If progress is not nil, the server is asked for progress notifications and each one's
// params, with the caller's token restored, are passed to it. The result is the server's raw
// result; an error means no result came back.
func (p *Pool) Call(ctx context.Context, exposed string, args json.RawMessage, token any, progress func(json.RawMessage)) (json.RawMessage, error) {
	t, ok := p.Catalog().Lookup(exposed)
	if !ok {
		return nil, fmt.Errorf("no tool %q", exposed)
	}
	s := p.byName[t.Server]
	params := map[string]any{"name": t.Name}
	if len(args) > 0 {
		params["arguments"] = args
	} else {
		params["arguments"] = json.RawMessage("{}")
	}
	if progress != nil && token != nil {
		// Tokens are made per call so that two clients' tokens can never meet upstream.
		tok := fmt.Sprintf("toolsift-%d", p.nextTok.Add(1))
		p.progress.Store(tok, func(raw json.RawMessage) {
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) != nil {
				return
			}
			orig, _ := json.Marshal(token)
			m["progressToken"] = orig
			out, _ := json.Marshal(m)
			progress(out)
		})
		defer p.progress.Delete(tok)
		params["_meta"] = map[string]any{"progressToken": tok}
	}
	raw, _ := json.Marshal(params)
	start := time.Now()
	res, err := p.request(ctx, s, "tools/call", json.RawMessage(raw))
	if err != nil {
		s.log.Warn("upstream call failed", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds(), "error", err)
		return nil, fmt.Errorf("upstream %q: calling %s: %w", t.Server, t.Name, err)
	}
	s.log.Debug("upstream call", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds())
	return res, nil
}

// request sends one request to s and returns the raw result. A server that is down is
// waited for, and an idle one started; the wait and the request together get the server's
// callTimeout.
func (p *Pool) request(ctx context.Context, s *server, method string, params any) (json.RawMessage, error) {
	timeout := s.callTimeout(p)
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for retried := false; ; retried = true {
		conn, done, err := p.await(reqCtx, s)
		if err != nil {
			if ctx.Err() == nil && reqCtx.Err() != nil {
				err = fmt.Errorf("not back within %v (callTimeout)", timeout)
				if last := s.err(); last != nil {
					err = fmt.Errorf("%w; last error: %w", err, last)
				}
			}
			return nil, fmt.Errorf("not connected: %w", err)
		}
		res, err := conn.Request(reqCtx, method, params)
		done()
		switch {
		case err == nil:
			return res, nil
		case errors.Is(err, ErrSessionLost) && !retried:
			// The server forgot the session, so it never acted on this request: send it
			// again once the connection is made anew.
			s.report(trouble{conn: conn, lost: true})
			continue
		case isClosed(err):
			s.report(trouble{conn: conn, lost: true})
			return nil, withReason(conn, err)
		case ctx.Err() == nil && reqCtx.Err() != nil:
			// Either the tool is slow or the server has hung; a ping tells which.
			s.report(trouble{conn: conn})
			return nil, fmt.Errorf("no answer within %v (callTimeout)", timeout)
		}
		return nil, err
	}
}

// withReason adds why a connection went away to err, once the connection knows: a stdio
// server's exit is reported a moment after its output ends.
func withReason(conn Conn, err error) error {
	select {
	case <-conn.Lost():
		if why := conn.Err(); why != nil {
			return fmt.Errorf("%w (%v)", err, why)
		}
	case <-time.After(time.Second):
	}
	return err
}

// await returns s's connection, asking for the server to be started if it is idle or down
// and waiting for it until ctx ends. A connection attempt that fails while it waits ends the
// wait with that attempt's error. The caller is tracked (see caller) until it calls done;
// taking the connection and becoming a caller are one step, so that an idle stop cannot
// come between them.
func (p *Pool) await(ctx context.Context, s *server) (conn Conn, done func(), err error) {
	s.mu.Lock()
	failures := s.failures
	s.mu.Unlock()
	for {
		s.mu.Lock()
		conn, state, lastErr, changed, failed := s.conn, s.state, s.lastErr, s.changed, s.failures > failures
		if conn != nil && !isLost(conn) {
			done := s.trackLocked(ctx)
			s.mu.Unlock()
			return conn, done, nil
		}
		s.mu.Unlock()
		switch {
		case state == StateDisabled:
			return nil, nil, errors.New("disabled in the configuration")
		case failed:
			return nil, nil, lastErr
		case state != StateConnected:
			// Idle, down, or held back because its catalog is cached: needed now.
			s.demand()
		}
		// A lost connection not yet replaced also ends in a change of state.
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func isLost(conn Conn) bool {
	select {
	case <-conn.Lost():
		return true
	default:
		return false
	}
}

// err returns the server's last connection error.
func (s *server) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Catalog is an immutable snapshot of every upstream tool, prompt and resource, in
// configuration order.
type Catalog struct {
	Tools     []Tool
	Prompts   []Prompt
	Resources []Resource
	byName    map[string]int
}

// NewCatalog makes a catalog of tools whose Exposed names are set, renaming any that collide.
func NewCatalog(tools []Tool) *Catalog {
	c := &Catalog{byName: make(map[string]int, len(tools))}
	for _, t := range tools {
		// Two servers with an empty prefix, or a hashed name meeting a real one, can
		// produce the same exposed name; the later tool gets a name of its own.
		if _, taken := c.byName[t.Exposed]; taken {
			t.Exposed = hashed(t.Server + "/" + t.Exposed)
		}
		c.byName[t.Exposed] = len(c.Tools)
		c.Tools = append(c.Tools, t)
	}
	return c
}

// Lookup finds a tool by exposed name.
func (c *Catalog) Lookup(exposed string) (Tool, bool) {
	i, ok := c.byName[exposed]
	if !ok {
		return Tool{}, false
	}
	return c.Tools[i], true
}

// Server reports whether the pool has a server of that name, and its configuration.
func (p *Pool) Server(name string) (config.Server, bool) {
	s, ok := p.byName[name]
	if !ok {
		return config.Server{}, false
	}
	return s.cfg, true
}

// Denied reports whether exposed names a tool that a server's allow or deny list hides, and
// which server. Hashed names cannot be traced back and report false.
func (p *Pool) Denied(exposed string) (serverName string, denied bool) {
	for _, s := range p.servers {
		tool := exposed
		if s.cfg.Prefix != "" {
			rest, ok := strings.CutPrefix(exposed, s.cfg.Prefix+"__")
			if !ok {
				continue
			}
			tool = rest
		}
		if !s.cfg.Allowed(tool) {
			return s.cfg.Name, true
		}
	}
	return "", false
}

// LoadTools reads a tools/list result ({"tools": [...]}) from a file, as the tools of a server
// named after the file's base name without its extension.
func LoadTools(file string) ([]Tool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: want a tools/list result {\"tools\": [...]}: %w", file, err)
	}
	server := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	tools := make([]Tool, 0, len(list.Tools))
	for i, raw := range list.Tools {
		t, err := ParseTool(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: tool %d: %w", file, i, err)
		}
		t.Server = server
		t.Exposed = ExposedName(server, t.Name)
		tools = append(tools, t)
	}
	return tools, nil
}

func isClosed(err error) bool { return errors.Is(err, ErrClosed) }

// WaitConnected blocks until every enabled server is connected or has failed a connection
// attempt, or ctx ends. Unlike WaitStarted it does not count a cached catalog as started.
func (p *Pool) WaitConnected(ctx context.Context) {
	for _, s := range p.servers {
		for {
			s.mu.Lock()
			state, changed := s.state, s.changed
			s.mu.Unlock()
			if state != StateStarting {
				break
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}
