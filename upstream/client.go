package upstream

import (
	"context"
	"encoding/json"
	"errors"

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
	client Client
	s      *server
}

// serverClient is what a server's client requests go to (see Peer).
var _ Peer = serverClient{}

// CreateMessage passes the server's sampling request to the client, for the server's caller.
func (c serverClient) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	caller := c.s.caller()
	if caller == nil {
		return nil, errNoCaller
	}
	return c.client.CreateMessage(caller, req)
}

// Elicit passes the server's elicitation request to the client, for the server's caller.
func (c serverClient) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	caller := c.s.caller()
	if caller == nil {
		return nil, errNoCaller
	}
	return c.client.Elicit(caller, req)
}

// ListRoots asks the client for its roots, for the server's caller.
func (c serverClient) ListRoots(_ context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	caller := c.s.caller()
	if caller == nil {
		return nil, errNoCaller
	}
	return c.client.ListRoots(caller, req)
}
