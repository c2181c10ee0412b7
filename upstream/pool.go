// Package upstream connects to the configured MCP servers and keeps a catalog of their
// tools. It knows nothing about client sessions.
package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
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
		InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Meta: t.Meta, Icons: t.Icons, Execution: t.Execution,
		AlwaysLoad: meta.AlwaysLoad,
	}, nil
}

// State is where a server's connection stands.
type State string

// Server states.
const (
	StateStarting  State = "starting"
	StateConnected State = "connected"
	StateFailed    State = "failed"
	StateDisabled  State = "disabled"
)

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
	// ConnectTimeout bounds one connection attempt including the first tools/list; 0 means
	// 60s, since an npx server may be downloaded first.
	ConnectTimeout time.Duration
	// RetryMin and RetryMax bound the back-off between failed attempts; 0 means 1s and 60s.
	RetryMin, RetryMax time.Duration
	// CallTimeout bounds one tool call; 0 means 120s. A server that stops answering must
	// become an error result, not a call that hangs.
	CallTimeout time.Duration
	// Client answers servers' sampling and elicitation requests and takes their log
	// messages; nil means servers are told the client cannot sample or elicit.
	Client Client
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

	catalog atomic.Pointer[Catalog]
	nextTok atomic.Int64
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
	// events wakes the connection loop: the server changed its tools or went away.
	events chan event

	mu        sync.Mutex        // guards the fields below
	callers   []context.Context // requests in flight, oldest first
	conn      Conn
	info      Info
	state     State
	lastErr   error
	summary   string
	tools     []Tool
	prompts   []Prompt
	resources []Resource
	cached    time.Time // when the cache entry in use was written; zero without one
	// up is closed, and replaced, whenever the server connects.
	up chan struct{}
}

type event int

const (
	eventRelist event = iota
	eventLost
)

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
	p := &Pool{opts: opts, log: opts.Logger, byName: map[string]*server{}}
	for _, cfg := range servers {
		s := &server{
			cfg:       cfg,
			log:       p.log.With("upstream", cfg.Name),
			stderr:    NewTail(2048),
			attempted: make(chan struct{}),
			events:    make(chan event, 1),
			state:     StateStarting,
			up:        make(chan struct{}),
		}
		if cfg.Disabled {
			s.state = StateDisabled
			s.attemptedOnce.Do(func() { close(s.attempted) })
		} else if opts.CacheDir != "" {
			p.loadCached(s)
		}
		p.servers = append(p.servers, s)
		p.byName[cfg.Name] = s
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

// run owns one server's connection: connect, list, wait for trouble, repeat.
func (p *Pool) run(s *server) {
	backoff := p.opts.RetryMin
	first := true
	for {
		err := p.connect(s)
		if first {
			s.attemptedOnce.Do(func() { close(s.attempted) })
			first = false
		}
		if err == nil {
			backoff = p.opts.RetryMin
			err = p.serve(s)
		}
		if p.ctx.Err() != nil {
			p.disconnect(s, nil)
			return
		}
		p.disconnect(s, err)
		// Jitter keeps many servers that failed together from retrying together.
		wait := backoff/2 + rand.N(backoff/2+1)
		s.log.Warn("upstream unavailable", "error", err, "retry_in", wait.Round(time.Millisecond).String(), "stderr", s.stderr.String())
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, p.opts.RetryMax)
	}
}

// connect makes one connection attempt and lists the server's tools.
func (p *Pool) connect(s *server) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.ConnectTimeout)
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
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	tools, raws, err := p.list(ctx, s, conn)
	if err != nil {
		_ = conn.Close()
		return err
	}
	prompts, resources := p.listExtras(ctx, s, conn, info)
	p.save(s, info, raws, prompts, resources)
	if info.Logging && p.opts.Client != nil {
		// Ask for every message: each client session gets those at or above the level it
		// set, and a server's default would hide them from all.
		if _, err := conn.Request(ctx, "logging/setLevel", map[string]string{"level": "debug"}); err != nil {
			s.log.Debug("upstream logging level not set", "error", err)
		}
	}
	s.mu.Lock()
	s.conn, s.info, s.state, s.lastErr, s.summary = conn, info, StateConnected, nil, info.Summary
	close(s.up)
	s.up = make(chan struct{})
	s.tools, s.prompts, s.resources = tools, prompts, resources
	s.mu.Unlock()
	s.log.Info("upstream connected", "tools", len(tools), "duration_ms", time.Since(start).Milliseconds())
	p.rebuild()
	return nil
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
// changed. It returns why the connection ended.
func (p *Pool) serve(s *server) error {
	for {
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case ev := <-s.events:
			if ev == eventLost {
				return ErrClosed
			}
			s.mu.Lock()
			conn, info := s.conn, s.info
			s.mu.Unlock()
			ctx, cancel := context.WithTimeout(p.ctx, p.opts.ConnectTimeout)
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

// disconnect closes a server's connection and records why.
func (p *Pool) disconnect(s *server, why error) {
	s.mu.Lock()
	conn := s.conn
	s.conn = nil
	if s.state != StateDisabled {
		s.state = StateFailed
	}
	if why != nil {
		s.lastErr = why
	}
	s.mu.Unlock()
	if conn != nil {
		if err := conn.Close(); err != nil {
			s.log.Debug("upstream close", "error", err)
		}
	}
}

func (p *Pool) signal(s *server, ev event) {
	select {
	case s.events <- ev:
	default:
		// An event is already pending; a lost connection must not be masked by a re-list.
		if ev == eventLost {
			select {
			case <-s.events:
			default:
			}
			select {
			case s.events <- ev:
			default:
			}
		}
	}
}

// notified handles a notification from a server.
func (p *Pool) notified(s *server, method string, params json.RawMessage) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		p.signal(s, eventRelist)
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
	p.catalog.Store(p.buildCatalog())
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
	timeout := cmp.Or(s.cfg.CallTimeout, p.opts.CallTimeout)
	conn, lastErr := s.awaitConn(ctx, timeout)
	if conn == nil {
		if lastErr != nil {
			return nil, fmt.Errorf("upstream %q is not connected: %w", t.Server, lastErr)
		}
		return nil, fmt.Errorf("upstream %q is not connected", t.Server)
	}
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
	defer s.track(ctx)()
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := conn.Request(callCtx, "tools/call", json.RawMessage(raw))
	if isClosed(err) {
		p.signal(s, eventLost)
	}
	if ctx.Err() == nil && callCtx.Err() != nil {
		err = fmt.Errorf("no answer within %v", timeout)
	}
	if err != nil {
		s.log.Warn("upstream call failed", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds(), "error", err)
		return nil, fmt.Errorf("upstream %q: calling %s: %w", t.Server, t.Name, err)
	}
	s.log.Debug("upstream call", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds())
	return res, nil
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

// awaitConn returns the server's connection. While the server is still on its first
// connection attempt (its tools known from the cache), it waits for it, up to timeout.
func (s *server) awaitConn(ctx context.Context, timeout time.Duration) (Conn, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		conn, state, lastErr, up := s.conn, s.state, s.lastErr, s.up
		s.mu.Unlock()
		if conn != nil || state != StateStarting {
			return conn, lastErr
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("still starting after %v", timeout)
		}
	}
}

// WaitConnected blocks until every enabled server is connected or has failed a connection
// attempt, or ctx ends. Unlike WaitStarted it does not count a cached catalog as started.
func (p *Pool) WaitConnected(ctx context.Context) {
	for {
		settled := true
		for _, st := range p.Statuses() {
			if st.State == StateStarting {
				settled = false
			}
		}
		if settled {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
