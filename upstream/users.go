package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/oauth"
)

// A shared service (Options.PerUser) signs each person in to an OAuth server for
// themselves. The server's supervisor then connects as nobody (oauth.Anonymous): it learns
// that the server asks for a sign-in, and serves it if it ever stops asking. Each person's
// requests go over a connection of their own, with their own token (oauth.UserSource),
// made on their first request and closed after userIdle unused.

// userIdle is how long a person's connection to a server stays open unused.
const userIdle = 15 * time.Minute

// users holds one server's connections of each person, by identity.User.Key.
type users struct {
	mu sync.Mutex // guards m and closed
	m  map[string]*userConn
	// closed is set by closeAll: no connection is made after it.
	closed bool
}

// userConn is one person's connection to a server.
type userConn struct {
	mu   sync.Mutex // guards conn and used; held while dialing, so that concurrent first requests dial once
	conn Conn
	used time.Time
}

// sourceKey carries the oauth.Source a dial signs in with (see withSource).
type sourceKey struct{}

// withSource returns ctx asking Dialer to sign in with src rather than the server's own
// sign-in.
func withSource(ctx context.Context, src *oauth.Source) context.Context {
	return context.WithValue(ctx, sourceKey{}, src)
}

func sourceFrom(ctx context.Context) *oauth.Source {
	src, _ := ctx.Value(sourceKey{}).(*oauth.Source)
	return src
}

// get returns key's entry, made if need be; nil once closed.
func (us *users) get(key string, now time.Time) *userConn {
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.closed {
		return nil
	}
	if us.m == nil {
		us.m = map[string]*userConn{}
	}
	// Closing the connections idle for long is done here, by the requests that come, so
	// that no goroutine is needed for it.
	for k, uc := range us.m {
		if k != key && uc.mu.TryLock() {
			if uc.conn != nil && now.Sub(uc.used) > userIdle {
				_ = uc.conn.Close()
				delete(us.m, k)
			}
			uc.mu.Unlock()
		}
	}
	uc, ok := us.m[key]
	if !ok {
		uc = &userConn{}
		us.m[key] = uc
	}
	return uc
}

// closeAll closes every connection; it may be called more than once.
func (us *users) closeAll() {
	us.mu.Lock()
	us.closed = true
	m := us.m
	us.m = nil
	us.mu.Unlock()
	for _, uc := range m {
		uc.mu.Lock()
		if uc.conn != nil {
			_ = uc.conn.Close()
			uc.conn = nil
		}
		uc.mu.Unlock()
	}
}

// personal reports whether u's requests to s go over u's own connection: s is signed in
// to per user and u is a person. A server that asks nobody to sign in is served that way
// too (without a token), since some ask only from the first call on; a token acts as no
// person and goes over the server's own connection, as nobody.
func (s *server) personal(u identity.User) bool {
	return s.perUser && u.Kind == identity.Person
}

// connFor returns u's own connection to s, dialing it first.
func (s *server) connFor(ctx context.Context, u identity.User) (Conn, error) {
	if u.Kind != identity.Person {
		return nil, &oauth.NeedsLoginError{Server: s.cfg.Name, PerUser: true,
			Why: "each person signs in to it for themselves, and this caller is no person (a token)"}
	}
	now := time.Now()
	uc := s.users.get(u.Key, now)
	if uc == nil {
		return nil, ErrClosed
	}
	uc.mu.Lock()
	defer uc.mu.Unlock()
	if uc.conn != nil && !isLost(uc.conn) {
		uc.used = now
		return uc.conn, nil
	}
	if uc.conn != nil {
		_ = uc.conn.Close()
		uc.conn = nil
	}
	src := s.tokens.UserSource(u.Key, s.cfg.Name, s.cfg.URL, s.cfg.OAuth)
	src.Reload() // a dial is rare, and may follow a sign-in just saved
	attempt, cancel := context.WithTimeout(withSource(ctx, src), s.startupTimeout)
	defer cancel()
	var peer Peer
	if s.shared.client != nil {
		peer = serverClient{client: s.shared.client, s: s}
	}
	cfg := s.cfg
	cfg.CallTimeout = s.callTimeout
	conn, _, err := s.shared.dial(attempt, cfg, nil, s.notified, peer)
	if err != nil {
		return nil, err
	}
	uc.conn, uc.used = conn, now
	s.learnTools(attempt, conn)
	return conn, nil
}

// learnTools lists s's tools over conn, a person's connection, when s has none yet (no
// cache, and its own connection was refused): the catalog is the same for everyone, and
// otherwise nobody could find a tool to sign in for.
func (s *server) learnTools(ctx context.Context, conn Conn) {
	s.mu.Lock()
	known, info := len(s.part.tools) > 0, s.info
	s.mu.Unlock()
	if known {
		return
	}
	tools, raws, err := s.list(ctx, conn)
	if err != nil {
		s.log.Warn("upstream tools not listed for a signed-in user", "error", err)
		return
	}
	s.save(info, raws, nil, nil)
	s.mu.Lock()
	s.part = part{tools: tools, prompts: s.part.prompts, resources: s.part.resources}
	s.mu.Unlock()
	s.log.Info("upstream tools learned through a user's sign-in", "tools", len(tools))
	s.shared.rebuild()
}

// requestAs sends a request to s over u's own connection, within deadline.
func (s *server) requestAs(ctx context.Context, deadline time.Time, u identity.User, method string, params any) (json.RawMessage, error) {
	reqCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for retried := false; ; retried = true {
		conn, err := s.connFor(reqCtx, u)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		done := s.trackLocked(ctx)
		s.mu.Unlock()
		res, err := conn.Request(reqCtx, method, params)
		done()
		switch {
		case err == nil:
			return res, nil
		case errors.Is(err, ErrSessionLost) && !retried:
			continue // the server never acted on it: send it again on a new session
		case ctx.Err() == nil && reqCtx.Err() != nil:
			return nil, fmt.Errorf("no answer within %v (callTimeout)", s.callTimeout)
		}
		return nil, err
	}
}

// NeedsSignIn reports whether u must sign in to the named server before calling it: the
// server signs in per user (Options.PerUser), asked its own connection to sign in, and u
// has no sign-in to it that still works.
func (p *Pool) NeedsSignIn(ctx context.Context, u identity.User, server string) bool {
	s, ok := p.byName[server]
	if !ok || !s.perUser {
		return false
	}
	s.mu.Lock()
	asks := s.state == StatePerUser
	s.mu.Unlock()
	if !asks {
		return false
	}
	if u.Kind != identity.Person {
		return true
	}
	return !s.tokens.UserSource(u.Key, s.cfg.Name, s.cfg.URL, s.cfg.OAuth).Ready(ctx)
}

// PerUserSignIn reports whether err means the caller must sign in to a server for
// themselves (a server that signs in per user), and which server.
func PerUserSignIn(err error) (server string, ok bool) {
	var needs *oauth.NeedsLoginError
	if errors.As(err, &needs) && needs.PerUser {
		return needs.Server, true
	}
	return "", false
}

// Learn connects u to the named server, a server signed in to per user, once u has signed
// in to it: the server's tools, if nobody's connection has listed them yet, are learned.
func (p *Pool) Learn(ctx context.Context, u identity.User, server string) error {
	s, ok := p.byName[server]
	if !ok || !s.personal(u) {
		return nil
	}
	// A connection u already has reads the new sign-in at once, not when its copy is old.
	s.tokens.UserSource(u.Key, s.cfg.Name, s.cfg.URL, s.cfg.OAuth).Reload()
	_, err := s.connFor(ctx, u)
	return err
}
