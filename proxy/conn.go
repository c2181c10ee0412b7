package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Conn is what a session needs of the transport it runs over, beside what mcp-go's server
// does with the session itself: the one seam between session logic and transports. Every
// notification a session sends goes through it. Implementations are safe for concurrent
// use.
type Conn interface {
	// Notify sends the client a notification. One sent while a request is served (ctx is
	// the request's) reaches the client before that request's reply.
	Notify(ctx context.Context, method string, params map[string]any) error
	// Flush returns once the notifications queued for the client so far (a call's progress
	// and log messages, which mcp-go queues) have been written, or ctx ends.
	Flush(ctx context.Context)
	// Listed is told the session's list that the tools/list request id (as mcp-go passes it
	// to hooks) is answered with; it calls written once that answer is on its way to the
	// client, or at once where the transport cannot tell when it is.
	Listed(ctx context.Context, id any, list []*form, written func())
	// Sample asks the client's model, through MCP sampling, while ctx's request is served.
	// It fails at once with errors.ErrUnsupported where the transport cannot ask within a
	// request.
	Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
}

// mcpConn is the Conn of the transports mcp-go serves (streamable HTTP, SSE).
type mcpConn struct {
	mcp *server.MCPServer
	id  string // the session's
	// grace is how long Flush waits for mcp-go's forwarder once it took the notifications
	// (see Options.ForwardGrace).
	grace time.Duration
}

// Notify sends the notification through the request's own session, so that over streamable
// HTTP a client that holds no GET stream still gets it, on the stream of its request; with
// no request at hand, to the session itself.
func (c mcpConn) Notify(ctx context.Context, method string, params map[string]any) error {
	err := c.mcp.SendNotificationToClient(ctx, method, params)
	if err != nil && c.id != "" {
		err = c.mcp.SendNotificationToSpecificClient(c.id, method, params)
	}
	return err
}

// Flush waits, briefly, until the session has taken every notification queued. Over
// streamable HTTP a forwarder moves them onto the request's stream, and one it holds when
// the handler returns is dropped (a race in mcp-go); nothing tells when it has written what
// it took, so Flush gives it grace too.
func (c mcpConn) Flush(ctx context.Context) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	ch := cs.NotificationChannel()
	deadline := time.Now().Add(200 * time.Millisecond)
	for len(ch) > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(100 * time.Microsecond)
	}
	t := time.NewTimer(c.grace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Listed counts the list at once: mcp-go encodes the answer and writes it itself, as soon
// as the hook that built the list returns.
func (c mcpConn) Listed(_ context.Context, _ any, _ []*form, written func()) { written() }

// Sample is not offered: mcp-go sends a streamable HTTP session's requests to the client on
// a GET stream the client may never open, and a search would wait out its timeout.
func (c mcpConn) Sample(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return nil, errors.ErrUnsupported
}
