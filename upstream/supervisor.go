package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/oauth"
	"github.com/toolsift/toolsift/poison"
)

// errIdle ends a connection that had no request for the server's idleTimeout.
var errIdle = errors.New("idle")

// run owns the server's connection until ctx, the pool's, ends: connect, list, wait for
// trouble, repeat. A server that is idle (lazyStart, idleTimeout) is started when a caller
// asks for it.
func (s *server) run(ctx context.Context) {
	s.mu.Lock()
	hold := s.state == StateStarting && !s.cached.IsZero() && s.shared.cachedStartDelay > 0
	s.mu.Unlock()
	if hold {
		t := time.NewTimer(s.shared.cachedStartDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-s.wake:
			t.Stop()
		}
	}
	backoff := s.shared.retryMin
	for {
		s.mu.Lock()
		idle := s.state == StateIdle
		s.mu.Unlock()
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			}
			s.mu.Lock()
			s.setLocked(StateStarting, nil)
			s.mu.Unlock()
			s.log.Info("upstream starting on demand")
		}
		err := s.connect(ctx)
		if err == nil {
			// Not in connect, which holds a start slot (see MaxStarting): a build may
			// wait for others to join it.
			s.shared.rebuild()
		}
		var needs *oauth.NeedsLoginError
		perUser := s.perUser && errors.As(err, &needs)
		if perUser {
			// Before the first attempt counts as ended: a search waiting for it then
			// knows to tell each caller to sign in.
			s.disconnect(nil, StatePerUser)
		}
		s.attemptedOnce.Do(func() { close(s.attempted) })
		if err == nil {
			backoff = s.shared.retryMin
			err = s.serve(ctx)
		}
		if ctx.Err() != nil {
			s.disconnect(nil, StateFailed)
			return
		}
		if errors.Is(err, errIdle) {
			s.disconnect(nil, StateIdle)
			s.log.Info("upstream stopped while idle", "idle_timeout", s.cfg.IdleTimeout.String())
			continue
		}
		if perUser {
			// Each person's requests go over their own connection; this one tries again
			// now and then, in case the server stops asking.
			s.log.Info("upstream asks each user to sign in: calls go with each caller's own sign-in")
			if !s.pause(ctx, s.shared.retryMax) {
				return
			}
			continue
		}
		if errors.As(err, &needs) {
			s.disconnect(needs, StateNeedsLogin)
			s.log.Warn("upstream needs sign-in", "run", "toolsift auth login "+s.cfg.Name, "reason", needs.Why)
			if !s.awaitLogin(ctx) {
				return
			}
			s.log.Info("upstream signed in: connecting")
			backoff = s.shared.retryMin
			continue
		}
		s.mu.Lock()
		tail := s.stderrTail.String()
		s.stderr, s.stderrLines = explain(tail), strings.Join(tailLines(tail, stderrTailLines), "\n")
		s.mu.Unlock()
		s.disconnect(err, StateFailed)
		// Jitter keeps many servers that failed together from retrying together.
		wait := backoff/2 + rand.N(backoff/2+1)
		s.log.Warn("upstream unavailable", "error", err, "retry_in", wait.Round(time.Millisecond).String(), "stderr", s.stderrTail.String())
		if !s.pause(ctx, wait) {
			return
		}
		backoff = min(backoff*2, s.shared.retryMax)
	}
}

// awaitLogin waits until a sign-in is stored for the server (toolsift auth login, in
// another process), looking every loginPoll. Nothing here starts a sign-in: that needs the
// user. It reports false when ctx ends.
func (s *server) awaitLogin(ctx context.Context) bool {
	if s.source == nil {
		return s.pause(ctx, s.shared.retryMax)
	}
	t := time.NewTicker(s.shared.loginPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			if s.source.Ready(ctx) {
				return true
			}
		}
	}
}

// pause waits before the next connection attempt: wait, or less when a caller is waiting
// for the server, though never less than RetryMin, so a crash loop is never a busy loop. It
// reports false when ctx ends: the pool is closing.
func (s *server) pause(ctx context.Context, wait time.Duration) bool {
	start := time.Now()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-s.wake:
	}
	t.Reset(min(wait, s.shared.retryMin) - time.Since(start))
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connect makes one connection attempt, within the server's startupTimeout, and lists the
// server's tools, prompts and resources. The caller tells the pool of the new part.
func (s *server) connect(ctx context.Context) error {
	if s.cfg.Type == config.TypeStdio {
		select {
		case s.shared.starting <- struct{}{}:
			defer func() { <-s.shared.starting }()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	attempt, cancel := context.WithTimeout(ctx, s.startupTimeout)
	defer cancel()
	start := time.Now()
	s.stderrTail.Reset()
	var peer Peer
	if s.shared.client != nil {
		peer = serverClient{client: s.shared.client, s: s}
	}
	cfg := s.cfg
	cfg.CallTimeout = s.callTimeout // the server's own, or the pool's
	if s.source != nil {
		attempt = withSource(attempt, s.source)
	}
	conn, info, err := s.shared.dial(attempt, cfg, s.stderrTail, s.notified, peer)
	timedOut := func(err error) error {
		if attempt.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return fmt.Errorf("not started within %v (startupTimeout): %w", s.startupTimeout, err)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("connecting: %w", timedOut(err))
	}
	tools, raws, err := s.list(attempt, conn)
	if err != nil {
		_ = conn.Close()
		return timedOut(err)
	}
	prompts, resources := s.listExtras(attempt, conn, info)
	s.save(info, raws, prompts, resources)
	s.resubscribe(attempt, conn)
	if info.Logging && s.shared.client != nil {
		// Ask for every message: each client session gets those at or above the level it
		// set, and a server's default would hide them from all.
		if _, err := conn.Request(attempt, "logging/setLevel", map[string]string{"level": "debug"}); err != nil {
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
	s.info, s.lastErr, s.stderr, s.stderrLines, s.summary, s.lastUsed = info, nil, "", "", s.checkedSummary(info.Summary), time.Now()
	s.connects++
	restarts := s.connects - 1
	s.part = part{tools: tools, prompts: prompts, resources: resources}
	s.setLocked(StateConnected, conn)
	s.mu.Unlock()
	s.log.Info("upstream connected", "tools", len(tools), "duration_ms", time.Since(start).Milliseconds(), "restarts", restarts)
	return nil
}

// list fetches and filters the server's tools.
func (s *server) list(ctx context.Context, conn Conn) ([]Tool, []json.RawMessage, error) {
	raws, err := listPages(ctx, conn, "tools/list", "tools")
	if err != nil {
		return nil, nil, fmt.Errorf("listing tools: %w", err)
	}
	return s.toolsFrom(raws), raws, nil
}

// toolsFrom turns the server's raw tools, listed or cached, into catalog tools, applying its
// configuration and naming them (see ExposedName). Each raw tool is valid JSON, as listPages
// and the cache's decoding leave them.
func (s *server) toolsFrom(raws []json.RawMessage) []Tool {
	tools := make([]Tool, 0, len(raws))
	for _, raw := range raws {
		t, err := parseValidTool(raw)
		if err != nil {
			s.log.Warn("upstream tool skipped", "error", err)
			continue
		}
		if !s.cfg.Allowed(t.Name) {
			continue
		}
		t.Server, t.Exposed = s.cfg.Name, ExposedName(s.cfg.Prefix, t.Name)
		if len(t.Repairs) > 0 && !s.repairsLogged[t.Name] {
			s.repairsLogged[t.Name] = true
			s.log.Info("upstream tool schema repaired", "tool", t.Name, "repairs", t.Repairs)
		}
		t.AlwaysLoad = s.cfg.AlwaysLoaded(t.Name, t.AlwaysLoad)
		t.Access = s.cfg.AccessOf(t.Name)
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

// serve waits while the connection is healthy, re-listing when the server says its lists
// changed. It returns why the connection ended: errIdle when the server had no request for
// its idleTimeout, ctx's error when the pool is closing.
func (s *server) serve(ctx context.Context) error {
	s.mu.Lock()
	conn, info := s.conn, s.info
	s.mu.Unlock()
	var idle <-chan time.Time
	if d := s.cfg.IdleTimeout; d > 0 {
		idle = time.After(d)
	}
	// relist is nil while re-lists are held back (see RelistInterval), until relistAgain.
	relist := s.relist
	var relistAgain <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
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
			ping, cancel := context.WithTimeout(ctx, s.shared.pingTimeout)
			_, err := conn.Request(ping, "ping", nil)
			cancel()
			// An error answer is still an answer.
			var rpcErr *RPCError
			if err != nil && !errors.As(err, &rpcErr) && ctx.Err() == nil {
				return fmt.Errorf("stopped answering: a call timed out and ping failed: %w", err)
			}
		case <-relistAgain:
			relist, relistAgain = s.relist, nil
		case <-relist:
			// A server that says its lists changed without end (one was seen to say it every
			// millisecond) costs a listing, a log line and a cache write each time.
			relist, relistAgain = nil, time.After(s.shared.relistInterval)
			listing, cancel := context.WithTimeout(ctx, s.startupTimeout)
			tools, raws, err := s.list(listing, conn)
			prompts, resources := s.listExtras(listing, conn, info)
			cancel()
			if err != nil {
				return err
			}
			s.save(info, raws, prompts, resources)
			s.mu.Lock()
			s.part = part{tools: tools, prompts: prompts, resources: resources}
			s.mu.Unlock()
			s.log.Info("upstream tools changed", "tools", len(tools))
			s.shared.rebuild()
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

// disconnect closes the server's connection, leaving it in state, and records why.
func (s *server) disconnect(why error, state State) {
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

// checkedSummary is the server's one line about itself, which tool_search's description
// shows every session, unless it looks poisoned (package poison): then none, and the log
// says why.
func (s *server) checkedSummary(summary string) string {
	if s.cfg.Pin == config.PinOff {
		return summary
	}
	if found := poison.Check(summary); len(found) > 0 {
		s.log.Warn("upstream instructions not shown to the model: they look poisoned", "rule", found[0].Rule, "excerpt", found[0].Excerpt)
		return ""
	}
	return summary
}
