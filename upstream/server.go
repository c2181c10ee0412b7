package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/oauth"
)

// shared is what the pool gives every server at creation: the options that apply to all
// servers, resolved to their defaults, and the few things the servers share. It has no way
// back to the pool but the rebuild callback.
type shared struct {
	dial             DialFunc
	client           Client // nil: servers are told the client cannot sample or elicit
	cacheDir         string // empty: no cache
	retryMin         time.Duration
	retryMax         time.Duration
	pingTimeout      time.Duration
	relistInterval   time.Duration
	cachedStartDelay time.Duration // not positive: no delay
	loginPoll        time.Duration
	// starting holds a token for each stdio connection attempt under way (see MaxStarting).
	starting chan struct{}
	// rebuild makes the pool's catalog take in the server's new part. A server calls it,
	// holding no lock, after its part changes; it returns once the catalog has it.
	rebuild func()
}

// server is one configured server and the supervisor of its connection: run (see
// supervisor.go) connects, serves and reconnects until the pool closes, while calls take the
// connection with await (see pool.go) and report trouble they find with it.
type server struct {
	// Fixed at creation.
	cfg config.Server
	log *slog.Logger
	// stderrTail keeps the end of a stdio server's standard error, of the current attempt.
	stderrTail *Tail
	shared     shared
	// slots holds a token for each tool call in flight to the server; its capacity is the
	// server's concurrency (config.Server.Concurrency).
	slots chan struct{}
	// progress routes this server's progress notifications to the calls to it.
	progress progressRouter
	// repairsLogged holds the tools whose schema repairs were logged, so that each is logged
	// once. Only toolsFrom uses it, in NewPool and then in the supervisor, never at once.
	repairsLogged map[string]bool
	// source is the server's OAuth sign-in, nil if it cannot have one: the supervisor asks
	// it whether a sign-in has come while the server waits for one.
	source *oauth.Source
	// perUser marks a server each person signs in to for themselves (Options.PerUser):
	// source is then nobody's, and tokens makes each person's; users holds their
	// connections (see users.go).
	perUser bool
	tokens  *oauth.Tokens
	users   users
	// startupTimeout and callTimeout are the server's own, or else the pool's.
	startupTimeout time.Duration
	callTimeout    time.Duration
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

	mu       sync.Mutex        // guards the fields below
	callers  []context.Context // requests in flight, oldest first
	lastUsed time.Time         // when a request last started or ended
	subs     map[string]bool   // URIs of the resource subscriptions held upstream
	conn     Conn
	info     Info
	state    State
	lastErr  error
	// stderr is what the server printed that tells most about its last failure (see
	// explain): for the user and the log, never for the error a call returns, since a
	// server may print a secret it was given.
	stderr string
	// stderrLines are the last lines it printed before that failure (see tailLines).
	stderrLines string
	failures    int // connection attempts that failed, ever
	connects    int // connections made, ever
	summary     string
	// part is what the server last listed, or the cache had. It is replaced whole, never
	// changed, since catalogs share it; the pool is told with shared.rebuild.
	part   part
	cached time.Time // when the cache entry in use was written; zero without one
	// changed is closed, and replaced, whenever state, conn or failures change.
	changed chan struct{}
}

// newServer returns the server for cfg, starting, or disabled if cfg says so. opts has its
// defaults filled in.
func newServer(cfg config.Server, opts Options, sh shared) *server {
	s := &server{
		cfg:            cfg,
		log:            opts.Logger.With("upstream", cfg.Name),
		stderrTail:     NewTail(2048),
		shared:         sh,
		startupTimeout: cmp.Or(cfg.StartupTimeout, opts.ConnectTimeout),
		callTimeout:    cmp.Or(cfg.CallTimeout, opts.CallTimeout),
		slots:          make(chan struct{}, cmp.Or(cfg.Concurrency, DefaultConcurrency)),
		attempted:      make(chan struct{}),
		relist:         make(chan struct{}, 1),
		trouble:        make(chan trouble, 1),
		wake:           make(chan struct{}, 1),
		state:          StateStarting,
		changed:        make(chan struct{}),
		repairsLogged:  map[string]bool{},
	}
	switch {
	case opts.Tokens != nil && SignsIn(cfg) && opts.PerUser:
		s.perUser, s.tokens = true, opts.Tokens
		s.source = oauth.Anonymous(cfg.Name, cfg.URL)
	case opts.Tokens != nil && SignsIn(cfg):
		s.source = opts.Tokens.Source(cfg.Name, cfg.URL, cfg.OAuth)
	}
	if cfg.Disabled {
		s.state = StateDisabled
		if cfg.Broken != "" {
			// Not started, as if disabled, but shown failed, with why.
			s.state, s.lastErr = StateFailed, errors.New(cfg.Broken)
			s.log.Warn("upstream not started", "error", cfg.Broken)
		}
		s.attemptedOnce.Do(func() { close(s.attempted) })
	}
	return s
}

// trouble is what a call found wrong with a connection. It names the connection, since by
// the time the loop reads it that one may have been replaced.
type trouble struct {
	conn Conn
	// lost: the connection is gone; otherwise a call got no answer in time and a ping
	// should tell whether the server still answers.
	lost bool
}

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

// err returns the server's last connection error.
func (s *server) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// caller returns the context of the newest request in flight to s, or nil. A server's
// requests to its client carry no link to the request that caused them, so with several in
// flight the newest is the best guess; with one, the common case, it is exact.
func (s *server) caller() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.callers) == 0 {
		return nil
	}
	return s.callers[len(s.callers)-1]
}

// trackLocked records ctx as a caller of s until the returned function is called. s.mu
// must be held.
func (s *server) trackLocked(ctx context.Context) func() {
	s.callers = append(s.callers, ctx)
	s.lastUsed = time.Now()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lastUsed = time.Now()
		for i, c := range s.callers {
			if c == ctx {
				s.callers = append(s.callers[:i], s.callers[i+1:]...)
				break
			}
		}
	}
}

// notified handles a notification from the server.
func (s *server) notified(method string, params json.RawMessage) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		select {
		case s.relist <- struct{}{}:
		default:
		}
	case "notifications/resources/updated":
		if s.shared.client != nil {
			s.shared.client.ResourceUpdated(params)
		}
	case "notifications/message":
		if caller := s.caller(); caller != nil && s.shared.client != nil {
			s.shared.client.Log(caller, params)
		}
	case "notifications/progress":
		s.progress.route(params)
	}
}

// enterCall takes one of the server's slots for a tool call, waiting for one until the
// call's deadline, or until ctx ends.
func (s *server) enterCall(ctx context.Context, deadline time.Time) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-t.C:
		return fmt.Errorf("its %d calls in flight (concurrency) left no room within %v (callTimeout)", cap(s.slots), s.callTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leaveCall gives the slot back.
func (s *server) leaveCall() { <-s.slots }
