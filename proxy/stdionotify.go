package proxy

import (
	"bytes"
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// notify writes a notification without params. In a context from withResultSoon it is held
// back, up to heldFor, to go out in one write with the next message (the request's result,
// which follows at once): one system call, and one wake-up of the client, instead of two.
func (c *stdioConn) notify(ctx context.Context, method string) {
	line := []byte(`{"jsonrpc":"2.0","method":"` + method + `"}` + "\n")
	if soon, _ := ctx.Value(resultSoonKey{}).(bool); !soon {
		c.writeLine(line)
		return
	}
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	if bytes.Contains(c.held, line) {
		return // one says it as well as two
	}
	c.held = append(c.held, line...)
	if c.heldTimer == nil {
		c.heldTimer = time.AfterFunc(heldFor, c.flushHeld)
	} else {
		c.heldTimer.Reset(heldFor)
	}
}

// heldFor bounds how long notify holds a notification back for the message after it.
const heldFor = 2 * time.Millisecond

// flushHeld writes the notifications held back, if any are still.
func (c *stdioConn) flushHeld() { c.writeLine(nil) }

type resultSoonKey struct{}

// withResultSoon marks ctx as a request's whose result follows at once (see notify), and
// withoutResultSoon takes the mark off.
func withResultSoon(ctx context.Context) context.Context {
	return context.WithValue(ctx, resultSoonKey{}, true)
}

func withoutResultSoon(ctx context.Context) context.Context {
	return context.WithValue(ctx, resultSoonKey{}, false)
}

// flushMethod marks a flush (see flush) in the connection's queue of notifications. It is
// never written out.
const flushMethod = "notifications/toolsift/flush"

// flush waits, for up to 200 ms, until every notification queued to the connection so far
// has been written: the connection writes them one at a time, in the order queued, so once
// a marker queued after them is taken, they are out. It reports false when the queue is
// full.
func (c *stdioConn) flush(ctx context.Context) bool {
	done := make(chan struct{})
	marker := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: flushMethod, Params: mcp.NotificationParams{AdditionalFields: map[string]any{"done": done}}}}
	select {
	case c.notes <- marker:
	default:
		return false
	}
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	case <-c.closed:
	}
	return true
}
