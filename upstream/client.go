package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Client answers what a server asks of its client (sampling, elicitation, roots) and receives
// its log messages, on behalf of the caller whose request the server is serving. The caller's
// context is the one given to Call or Request.
type Client interface {
	CreateMessage(caller context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(caller context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(caller context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
	Log(caller context.Context, params json.RawMessage)
	// ResourceUpdated reports a server's notifications/resources/updated, which belongs to
	// whoever subscribed to the resource rather than to a caller.
	ResourceUpdated(params json.RawMessage)
}

// errNoCaller answers a server that asks its client something while no call is in flight:
// there is nobody to ask.
var errNoCaller = errors.New("no client request is in flight to answer this")

// serverClient is one server's view of the pool's Client: it finds the caller to act for.
type serverClient struct {
	p *Pool
	s *server
}

func (c serverClient) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	caller := c.s.caller()
	if caller == nil {
		return nil, errNoCaller
	}
	return c.p.opts.Client.CreateMessage(caller, req)
}

func (c serverClient) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	caller := c.s.caller()
	if caller == nil {
		return nil, errNoCaller
	}
	return c.p.opts.Client.Elicit(caller, req)
}

func (c serverClient) ListRoots(_ context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	caller := c.s.caller()
	if caller == nil {
		return nil, errNoCaller
	}
	return c.p.opts.Client.ListRoots(caller, req)
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
