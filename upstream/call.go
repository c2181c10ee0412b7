package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/internal/trace"
)

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
		params["arguments"] = renameArgs(args, t.Args)
	} else {
		params["arguments"] = json.RawMessage("{}")
	}
	meta := trace.Meta(ctx) // the caller's trace, on to the server (SEP-414)
	if progress != nil && token != nil {
		tok, remove := s.progress.add(token, progress)
		defer remove()
		if meta == nil {
			meta = map[string]any{}
		}
		meta["progressToken"] = tok
	}
	if meta != nil {
		params["_meta"] = meta
	}
	deadline := time.Now().Add(s.callTimeout)
	if err := s.enterCall(ctx, deadline); err != nil {
		s.log.Warn("upstream call not sent", "tool", t.Name, "concurrency", cap(s.slots), "error", err)
		return nil, fmt.Errorf("upstream %q: calling %s: %w", t.Server, t.Name, err)
	}
	defer s.leaveCall()
	raw, _ := json.Marshal(params)
	start := time.Now()
	var res json.RawMessage
	var err error
	if u := identity.FromContext(ctx); s.personal(u) {
		res, err = s.requestAs(ctx, deadline, u, "tools/call", json.RawMessage(raw))
	} else {
		res, err = s.requestBy(ctx, deadline, "tools/call", json.RawMessage(raw))
	}
	if err != nil {
		s.log.Warn("upstream call failed", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds(), "error", err)
		return nil, fmt.Errorf("upstream %q: calling %s: %w", t.Server, t.Name, err)
	}
	s.log.Debug("upstream call", "tool", t.Name, "duration_ms", time.Since(start).Milliseconds())
	return res, nil
}

// Request sends a request to the named server and returns its raw result.
func (p *Pool) Request(ctx context.Context, serverName, method string, params any) (json.RawMessage, error) {
	s, ok := p.byName[serverName]
	if !ok {
		return nil, fmt.Errorf("no server %q", serverName)
	}
	res, err := s.request(ctx, method, params)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %s: %w", serverName, method, err)
	}
	s.trackSubscription(method, params)
	return res, nil
}

// request sends one request to the server and returns the raw result. A server that is
// down is waited for, and an idle one started; the wait and the request together get the
// server's callTimeout.
func (s *server) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if u := identity.FromContext(ctx); s.personal(u) {
		return s.requestAs(ctx, time.Now().Add(s.callTimeout), u, method, params)
	}
	return s.requestBy(ctx, time.Now().Add(s.callTimeout), method, params)
}

// requestBy is request with the time the call's callTimeout runs out, which a tool call
// also spends waiting for a slot (see enterCall).
func (s *server) requestBy(ctx context.Context, deadline time.Time, method string, params any) (json.RawMessage, error) {
	timeout := s.callTimeout
	reqCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for retried := false; ; retried = true {
		conn, done, err := s.await(reqCtx)
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

// await returns the server's connection, asking for the server to be started if it is idle
// or down and waiting for it until ctx ends. A connection attempt that fails while it waits
// ends the wait with that attempt's error. The caller is tracked (see caller) until it calls
// done; taking the connection and becoming a caller are one step, so that an idle stop
// cannot come between them.
func (s *server) await(ctx context.Context) (conn Conn, done func(), err error) {
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
		case s.cfg.Broken != "":
			return nil, nil, lastErr
		case state == StateDisabled:
			return nil, nil, errors.New("disabled in the configuration")
		case state == StateNeedsLogin:
			return nil, nil, lastErr
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

// isLost reports whether conn has gone away.
func isLost(conn Conn) bool {
	select {
	case <-conn.Lost():
		return true
	default:
		return false
	}
}

// isClosed reports whether err says the connection has gone away.
func isClosed(err error) bool { return errors.Is(err, ErrClosed) }
