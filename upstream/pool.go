// Package upstream connects to the configured MCP servers and keeps a catalog of their
// tools. It knows nothing about client sessions.
//
// A Pool runs a supervisor goroutine per server, which connects, lists the server's tools,
// prompts and resources, and reconnects with back-off; the pool routes calls to the servers
// and keeps an immutable Catalog of what they list, made anew whenever a list changes: each
// server names its own tools once a list, and a new catalog is merged from those parts, one
// for many changes that come together.
package upstream

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/pin"
)

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
	// StateNeedsLogin is a server that asks for an OAuth sign-in toolsift does not have:
	// calls say to run toolsift auth login NAME, and a sign-in stored meanwhile (by that
	// command, in another process) is picked up within seconds.
	StateNeedsLogin State = "needs-login"
	// StatePerUser is a server of a shared service that each person signs in to for
	// themselves (Options.PerUser): calls go over the caller's own connection.
	StatePerUser State = "per-user"
)

// Usable reports whether the server's tools can be called now or after an on-demand start.
func (st State) Usable() bool { return st == StateConnected || st == StateIdle || st == StatePerUser }

// Status describes one configured server.
type Status struct {
	Name    string
	State   State
	Tools   int
	Summary string
	// Err is the last connection error, if any.
	Err error
	// Stderr is what a stdio server printed that tells most about that error, if anything.
	// It is the user's to read (it may quote a secret the server was given): it never
	// reaches a model.
	Stderr string
	// StderrTail is the last lines a stdio server printed before that error, one per line,
	// for status --verbose; the same care applies.
	StderrTail string
	// Cached is when the server's cached catalog was saved; zero if there is none.
	Cached time.Time
	// Access is the server's access in the configuration (see Tool.Access).
	Access *config.Access
	// PerUser says each person signs in to the server for themselves (Options.PerUser).
	PerUser bool
	// Held counts the server's tools held for review (Catalog.Held); Tools does not.
	Held int
}

// Admits reports whether u may use the server itself (its tools may admit others).
func (st *Status) Admits(u identity.User) bool {
	return st.Access == nil || u.Admitted(st.Access.Users, st.Access.Groups, st.Access.Tokens)
}

// Options configures a Pool. The zero value of each field means its documented default.
type Options struct {
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
	// Dial connects to a server; nil means Dialer(Version).
	Dial DialFunc
	// Version is toolsift's version, sent to servers when connecting.
	Version string
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
	// RelistInterval is the least time between two re-lists of one server, however often it
	// says its lists changed; what it says meanwhile is taken up by the next. 0 means 500ms.
	RelistInterval time.Duration
	// MaxStarting bounds how many stdio servers start at once; 0 means 8. Forty npx
	// servers started together compete for CPU and memory, and none is ready sooner for
	// it; HTTP and SSE servers cost nothing here to connect and are not held back.
	MaxStarting int
	// CachedStartDelay holds back the start of servers whose catalog came from the cache:
	// they have nothing urgent to do, and starting them at once would have them compete
	// with the client's first requests for the CPU. A call to one starts it at once. 0
	// means 1s; negative means no delay.
	CachedStartDelay time.Duration
	// Tokens signs in to the HTTP and SSE servers that ask for OAuth; nil means none is
	// signed in to (a server that asks then fails).
	Tokens *oauth.Tokens
	// PerUser makes the pool a shared service's: each person signs in for themselves to the
	// servers that ask for OAuth, and their requests go with their own token over a
	// connection of their own (the caller's identity.User, from the request's context);
	// a sign-in stored with toolsift auth login is never used.
	PerUser bool
	// LoginPoll is how often a server waiting for a sign-in looks for one; 0 means 2s.
	LoginPoll time.Duration
	// CacheDir keeps each server's last catalog, so that a restart serves it at once while
	// the server starts; empty means no cache.
	CacheDir string
	// Pins holds the tools whose definitions changed, or look poisoned, for the user's
	// review (each server's pin mode says how); nil pins nothing.
	Pins *pin.Book
	// PinPoll is how often the pins are read again for another process's approvals; 0
	// means 1s.
	PinPoll time.Duration
}

// DefaultConcurrency bounds the calls in flight to a server whose configuration sets none:
// a server that hangs is sent no more than that many calls, and the rest wait their turn
// (within callTimeout) in its own queue.
const DefaultConcurrency = 64

// DefaultCallTimeout bounds a call to a server whose configuration and Options set none.
const DefaultCallTimeout = 2 * time.Minute

// Pool holds one connection per enabled server and the catalog of their tools.
type Pool struct {
	// Fixed at creation.
	opts     Options
	servers  []*server // in configuration order
	byName   map[string]*server
	prefixes map[string]string // the enabled servers' non-empty prefixes, to their names

	ctx    context.Context // the servers' supervisors run under it; Close cancels it
	cancel context.CancelFunc
	wg     sync.WaitGroup // the supervisors started by Start; Close waits for them
	closed sync.Once

	// onChange is Hooks.OnChange, set by Start before any server can change the catalog.
	onChange func()

	// catalog is the current catalog, read without a lock and replaced whole (see rebuild).
	catalog atomic.Pointer[Catalog]
	// changes counts the calls to rebuild, each made after a server's part changed.
	changes atomic.Uint64
	// onChangeCost is how long the last call to onChange took, in nanoseconds.
	onChangeCost atomic.Int64
	// started is set once every server has made its first attempt (see WaitStarted).
	started atomic.Bool
	// flushFailing is set while the pins cannot be recorded: said once.
	flushFailing atomic.Bool

	// rebuildMu is held while a catalog is built and stored, so that builds are made one
	// at a time, each from parts no older than the last's: two servers that connect at
	// once each ask for one, and an older build must never be stored last.
	rebuildMu sync.Mutex // guards the fields below
	built     uint64     // how many changes the stored catalog has taken in
	nextBuild time.Time  // a build before it waits until then (see buildPace)
}

// NewPool returns a pool for the given servers. Call Start to connect.
func NewPool(servers []config.Server, opts Options) *Pool {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Dial == nil {
		opts.Dial = Dialer(opts.Version, opts.Tokens)
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
		opts.CallTimeout = DefaultCallTimeout
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
	if opts.RelistInterval == 0 {
		opts.RelistInterval = 500 * time.Millisecond
	}
	if opts.LoginPoll == 0 {
		opts.LoginPoll = 2 * time.Second
	}
	if opts.PinPoll == 0 {
		opts.PinPoll = time.Second
	}
	p := &Pool{opts: opts, byName: map[string]*server{}, prefixes: map[string]string{}}
	sh := shared{
		dial:             opts.Dial,
		cacheDir:         opts.CacheDir,
		retryMin:         opts.RetryMin,
		retryMax:         opts.RetryMax,
		pingTimeout:      opts.PingTimeout,
		relistInterval:   opts.RelistInterval,
		cachedStartDelay: opts.CachedStartDelay,
		loginPoll:        opts.LoginPoll,
		starting:         make(chan struct{}, opts.MaxStarting),
		rebuild:          p.rebuild,
	}
	for _, cfg := range servers {
		s := newServer(cfg, opts, sh)
		p.servers = append(p.servers, s)
		p.byName[cfg.Name] = s
		if cfg.Prefix != "" && !cfg.Disabled {
			p.prefixes[cfg.Prefix] = cfg.Name
		}
	}
	if opts.CacheDir != "" {
		// Decoding forty cached catalogs is most of toolsift's start-up time: spread it.
		var wg sync.WaitGroup
		for _, s := range p.servers {
			if !s.cfg.Disabled {
				wg.Go(s.loadCached)
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
	p.flushPins()
	return p
}

// flushPins records what the last catalog build pinned or held.
func (p *Pool) flushPins() {
	if p.opts.Pins == nil {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	err := p.opts.Pins.Flush(ctx)
	if err != nil && !p.flushFailing.Swap(true) {
		p.opts.Logger.Warn("pinned tools not recorded; trying again every second", "error", err)
	}
	if err == nil && p.flushFailing.Swap(false) {
		p.opts.Logger.Info("pinned tools recorded")
	}
}

// watchPins rebuilds the catalog when another process changed the pins (toolsift review
// approved or rejected a tool, another toolsift pinned one), and retries what flushPins
// could not record.
func (p *Pool) watchPins() {
	t := time.NewTicker(p.opts.PinPoll)
	defer t.Stop()
	failing := false // said once, until the pins are read again
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		p.flushPins()
		changed, err := p.opts.Pins.Refresh(p.ctx)
		if err != nil {
			if !failing {
				p.opts.Logger.Warn("pinned tools not read again; trying every second", "error", err)
			}
			failing = true
			continue
		}
		if failing {
			p.opts.Logger.Info("pinned tools read again")
		}
		failing = false
		if changed {
			p.opts.Logger.Info("pinned tools changed; catalog rebuilt")
			p.rebuild()
		}
	}
}

// Hooks connect a pool to whoever serves its tools. That server is usually built on the
// pool, so they are given to Start, once both exist, rather than to NewPool.
type Hooks struct {
	// Client answers servers' sampling, elicitation and roots requests and takes their log
	// messages and resource updates; nil means servers are told the client cannot sample or
	// elicit.
	Client Client
	// OnChange is called, outside any lock, after the catalog changes. Changes that come
	// together (servers starting at once) make one catalog and one call, and a stream of
	// them is paced (see buildPace), so that the calls cost a small part of the CPU however
	// many servers there are; one change after a quiet moment is reported at once.
	OnChange func()
}

// Start connects to every enabled server concurrently, in the background, reporting through
// h. Servers that fail are retried with back-off until Close. Call it once.
func (p *Pool) Start(h Hooks) {
	p.onChange = h.OnChange
	if p.opts.Pins != nil {
		p.wg.Go(p.watchPins)
	}
	for _, s := range p.servers {
		// Before the supervisor starts, so that it and the connections it makes see it.
		s.shared.client = h.Client
		if s.cfg.Disabled {
			continue
		}
		p.wg.Go(func() { s.run(p.ctx) })
	}
}

// Close stops every server and waits for their supervisors to end. It is idempotent.
func (p *Pool) Close() error {
	p.closed.Do(func() {
		p.cancel()
		p.wg.Wait()
		for _, s := range p.servers {
			s.users.closeAll()
		}
	})
	return nil
}

// Statuses reports every configured server, in configuration order.
func (p *Pool) Statuses() []Status {
	out := make([]Status, 0, len(p.servers))
	held := map[string]int{}
	for _, h := range p.Catalog().Held {
		held[h.Server]++
	}
	for _, s := range p.servers {
		s.mu.Lock()
		st := Status{Name: s.cfg.Name, State: s.state, Tools: len(s.part.tools) - held[s.cfg.Name], Summary: s.summary, Err: s.lastErr, Stderr: s.stderr, StderrTail: s.stderrLines, Cached: s.cached, Access: s.cfg.Access, PerUser: s.perUser, Held: held[s.cfg.Name]}
		if s.cfg.Description != "" {
			st.Summary = s.cfg.Description
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
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

// ServerOf returns the configured server whose tools the exposed name would be, by its
// prefix (prefix__tool), whether or not the server is running or offers that tool.
func (p *Pool) ServerOf(exposed string) (serverName string, ok bool) {
	for _, s := range p.servers {
		if s.cfg.Prefix != "" && strings.HasPrefix(exposed, s.cfg.Prefix+"__") {
			return s.cfg.Name, true
		}
	}
	return "", false
}

// WaitStarted blocks until every server has finished its first connection attempt, or ctx
// ends. It returns the names of servers still on their first attempt.
func (p *Pool) WaitStarted(ctx context.Context) (pending []string) {
	if p.started.Load() {
		return nil
	}
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
	if len(pending) == 0 {
		p.started.Store(true) // an attempt made stays made
	}
	return pending
}

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
