package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/internal/jsonrpc"
)

// ServeStdio serves one client over in and out until in ends or ctx is done. Only JSON-RPC
// is written to out.
//
// toolsift is its own stdio transport around mcp-go's server, rather than mcp-go's
// StdioServer: that one installs signal handling, serves tool calls from a pool of five
// workers (five hung calls would hold every search behind them), cancels what it has read
// when its context ends, and writes notifications from a goroutine of its own, after the
// reply they should precede. Here each message is read and decoded once, each request is
// served on a goroutine of its own by mcp-go's server, and every message is written by the
// goroutine that has it, under one lock.
//
// When ctx ends (SIGTERM), toolsift stops reading but goes on answering the requests it has
// read, for up to ShutdownGrace, then cancels those still in flight. When in ends, it
// cancels them at once: the client is gone.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return newStdio(s, out).serve(ctx, in)
}

func newStdio(s *Server, out io.Writer) *stdio {
	return &stdio{s: s, out: out, notes: make(chan mcp.JSONRPCNotification, 100),
		pending: map[int64]chan answer{}, closed: make(chan struct{})}
}

// stdio is a stdio connection: its transport, its Conn, and its one client session as
// mcp-go's server sees it.
type stdio struct {
	s     *Server
	notes chan mcp.JSONRPCNotification // mcp-go's notifications to the session

	writeMu   sync.Mutex // guards out: each message is one write
	out       io.Writer
	writeErrs atomic.Int32 // failed writes to the client

	initialized atomic.Bool
	level       atomic.Value // mcp.LoggingLevel
	info        atomic.Value // mcp.Implementation
	caps        atomic.Value // mcp.ClientCapabilities
	version     atomic.Value // string: the protocol version

	mu       sync.Mutex // guards pending, nextID and stopping
	pending  map[int64]chan answer
	nextID   int64
	stopping bool           // no more requests are taken
	served   sync.WaitGroup // requests being served
	closed   chan struct{}  // closed when the connection stops serving
}

// answer is the client's answer to a request of toolsift's.
type answer struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

var (
	_ Conn                              = (*stdio)(nil)
	_ server.SessionWithLogging         = (*stdio)(nil)
	_ server.SessionWithClientInfo      = (*stdio)(nil)
	_ server.SessionWithProtocolVersion = (*stdio)(nil)
	_ server.SessionWithSampling        = (*stdio)(nil)
	_ server.SessionWithElicitation     = (*stdio)(nil)
	_ server.SessionWithRoots           = (*stdio)(nil)
)

// message is a line the client wrote, decoded once.
type message struct {
	line           []byte
	ID             json.RawMessage `json:"id"`
	Method         string          `json:"method"`
	Result         json.RawMessage `json:"result"`
	Error          json.RawMessage `json:"error"`
	malformed, bad bool            // not JSON; JSON but not JSON-RPC as toolsift reads it
}

func parseMessage(line []byte) message {
	m := message{line: line}
	if err := json.Unmarshal(line, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		m.bad = errors.As(err, &typeErr)
		m.malformed = !m.bad
	}
	return m
}

// isRequest reports a request of the client's: one owed an answer.
func (m message) isRequest() bool { return !m.malformed && !m.bad && len(m.ID) > 0 && m.Method != "" }

func (c *stdio) serve(ctx context.Context, in io.Reader) error {
	// Requests outlive ctx by the shutdown grace: they run under a context of their own.
	reqCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	s := c.s
	if err := s.mcp.RegisterSession(reqCtx, c); err != nil {
		return fmt.Errorf("registering the stdio session: %w", err)
	}
	defer s.mcp.UnregisterSession(reqCtx, c.SessionID())
	sess := s.openSession(c.SessionID(), c, true)
	reqCtx = s.mcp.WithContext(reqCtx, c)

	var notifier sync.WaitGroup
	notifier.Go(func() {
		for {
			select {
			case n := <-c.notes:
				if n.Method == flushMethod {
					close(n.Params.AdditionalFields["done"].(chan struct{})) // all before it are out
					continue
				}
				c.write(n)
			case <-c.closed:
				return
			}
		}
	})

	// The reader dispatches each message as read, until the end of input, or until the
	// connection stops taking requests (a SIGTERM): then it may be blocked in a read no one
	// can interrupt, and ends with the process.
	ended := make(chan error, 1)
	go func() {
		r := jsonrpc.NewLines(in, s.opts.MaxRequestBytes)
		for {
			line, head, tail, err := r.Next()
			switch {
			case err == io.EOF:
				ended <- nil
				return
			case err != nil:
				ended <- fmt.Errorf("reading stdin: %w", err)
				return
			case head != nil:
				s.log.Warn("request refused: too large", "max_bytes", s.opts.MaxRequestBytes)
				if id := jsonrpc.IDOfEnds(head, tail); id != nil {
					c.writeError(id, mcp.INVALID_REQUEST, fmt.Sprintf("request over %d bytes, toolsift's limit", s.opts.MaxRequestBytes))
				}
			default:
				if !c.dispatch(reqCtx, sess, parseMessage(line)) {
					return
				}
			}
		}
	}()

	var err error
	sigterm := false
	select {
	case err = <-ended:
	case <-ctx.Done():
		sigterm = true
	}
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	if sigterm {
		c.drain()
	}
	cancel()
	c.served.Wait()
	close(c.closed)
	notifier.Wait()
	return err
}

// drain waits, up to ShutdownGrace, for the requests read before a SIGTERM to be answered.
func (c *stdio) drain() {
	done := make(chan struct{})
	go func() {
		c.served.Wait()
		close(done)
	}()
	t := time.NewTimer(c.s.opts.ShutdownGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.s.log.Warn("requests unanswered at shutdown", "grace", c.s.opts.ShutdownGrace.String())
	}
}

// dispatch serves a message: a request on a goroutine of its own, so that a hung call never
// holds a search; a notification, or an answer to toolsift, at once, in the order read. It
// reports false once the connection takes no more requests.
func (c *stdio) dispatch(ctx context.Context, sess *session, m message) bool {
	switch {
	case len(m.line) == 0 || m.malformed && isBlank(m.line):
	case m.malformed:
		c.writeError(json.RawMessage("null"), mcp.PARSE_ERROR, "Parse error")
	case m.Method == "" && len(m.ID) > 0 && (m.Result != nil || m.Error != nil):
		c.answered(m)
	case m.isRequest() && c.s.Refused(m.Method) != "":
		c.writeError(m.ID, mcp.METHOD_NOT_FOUND, c.s.Refused(m.Method))
	case m.isRequest() && m.Method == string(mcp.MethodToolsList) && c.legacy():
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return false
		}
		c.served.Add(1)
		c.mu.Unlock()
		// Served as read: it waits on nothing, and costs less than a hand-off.
		c.listTools(sess, m.ID)
		c.served.Done()
	case m.isRequest():
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return false
		}
		c.served.Add(1)
		c.mu.Unlock()
		go func() {
			defer c.served.Done()
			c.handle(ctx, m)
			if m.Method == string(mcp.MethodToolsList) {
				// Written: the re-list a held tool_search waits for (see session).
				sess.listWritten()
			}
		}()
	default:
		// A notification, or JSON that is not JSON-RPC as toolsift reads it: mcp-go's server
		// answers that as it sees fit.
		c.handle(ctx, m)
	}
	return true
}

// legacy reports whether the session was initialized at a protocol revision with sessions
// (2025-11-25 or older), under which its tool list is its own.
func (c *stdio) legacy() bool {
	v := c.ProtocolVersion()
	return c.Initialized() && v != "" && v < "2026"
}

// listTools answers tools/list with the session's own list (Server.toolsFor), written from
// each tool's definition encoded once per catalog, and counts it as the session's re-list
// once written (see session, step 4).
func (c *stdio) listTools(sess *session, id json.RawMessage) {
	forms, _ := c.s.toolsFor(sess, false)
	size := 64 + len(id)
	for _, f := range forms {
		size += len(f.raw()) + 1
	}
	line := make([]byte, 0, size)
	line = fmt.Appendf(line, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[`, id)
	for i, f := range forms {
		if i > 0 {
			line = append(line, ',')
		}
		line = append(line, f.raw()...)
	}
	line = append(line, "]}}\n"...)
	c.writeLine(line)
	sess.listWritten()
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// handle has mcp-go's server handle a message, and writes its answer, if any, under the
// id the client wrote: mcp-go decodes an id through a float64, which rounds one too long.
func (c *stdio) handle(ctx context.Context, m message) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("panic serving a request", "panic", r, "stack", string(debug.Stack()))
			if m.isRequest() {
				c.writeError(m.ID, mcp.INTERNAL_ERROR, "internal error")
			}
		}
	}()
	resp := c.s.mcp.HandleMessage(ctx, m.line)
	if resp == nil {
		return
	}
	if !m.isRequest() {
		c.write(resp)
		return
	}
	switch r := resp.(type) {
	case mcp.JSONRPCResponse:
		result, err := json.Marshal(r.Result)
		if err != nil {
			c.s.log.Error("encoding a result", "method", m.Method, "error", err)
			c.writeError(m.ID, mcp.INTERNAL_ERROR, "internal error")
			return
		}
		c.writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result))
	case mcp.JSONRPCError:
		details, _ := json.Marshal(r.Error)
		c.writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`+"\n", m.ID, details))
	default:
		c.write(resp)
	}
}

func (c *stdio) writeError(id json.RawMessage, code int, msg string) {
	text, _ := json.Marshal(msg)
	c.writeLine(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, text))
}

// write writes msg, one JSON-RPC message, on a line.
func (c *stdio) write(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		c.s.log.Error("encoding a message to the client", "error", err)
		return
	}
	c.writeLine(append(b, '\n'))
}

// writeLine writes one message and its newline, whole.
func (c *stdio) writeLine(line []byte) {
	c.writeMu.Lock()
	_, err := c.out.Write(line)
	c.writeMu.Unlock()
	if err != nil {
		// A client gone is EPIPE here: logged once at warn, not fatal.
		level := slog.LevelDebug
		if c.writeErrs.Add(1) == 1 {
			level = slog.LevelWarn
		}
		c.s.log.Log(context.Background(), level, "writing to the client", "error", err)
	}
}

// Notify writes a notification at once: before the reply of the request being served,
// which its handler writes when it returns.
func (c *stdio) Notify(_ context.Context, method string, params map[string]any) error {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method}}
	if params != nil {
		n.Params.AdditionalFields = params
	}
	c.write(n)
	return nil
}

// flushMethod marks a flush in the connection's queue of notifications. It is never
// written out.
const flushMethod = "notifications/toolsift/flush"

// Flush waits, for up to 200 ms, until every notification mcp-go queued to the connection
// so far has been written: they are written one at a time, in the order queued, so once a
// marker queued after them is taken, they are out.
func (c *stdio) Flush(ctx context.Context) {
	done := make(chan struct{})
	marker := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: flushMethod, Params: mcp.NotificationParams{AdditionalFields: map[string]any{"done": done}}}}
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case c.notes <- marker:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	case <-c.closed:
	}
}
