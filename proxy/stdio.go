package proxy

import (
	"context"
	"encoding/json"
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
		flushes: make(chan chan struct{}), pending: map[int64]chan answer{}, lists: map[string]pendingList{},
		closed: make(chan struct{})}
}

// stdio is a stdio connection: its transport, its Conn, and its one client session as
// mcp-go's server sees it.
type stdio struct {
	s       *Server
	notes   chan mcp.JSONRPCNotification // mcp-go's notifications to the session
	flushes chan chan struct{}           // Flush's requests to the notifier (see Flush)

	writeMu   sync.Mutex // guards out: each message is one write
	out       io.Writer
	writeErrs atomic.Int32 // failed writes to the client

	initialized atomic.Bool
	level       atomic.Value // mcp.LoggingLevel
	info        atomic.Value // mcp.Implementation
	caps        atomic.Value // mcp.ClientCapabilities
	version     atomic.Value // string: the protocol version

	mu       sync.Mutex // guards pending, nextID, stopping and lists
	pending  map[int64]chan answer
	nextID   int64
	stopping bool                   // no more requests are taken
	lists    map[string]pendingList // the lists tools/list requests are answered with, by id
	served   sync.WaitGroup         // requests being served
	closed   chan struct{}          // closed when the connection stops serving
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

// message is a line the client wrote, its envelope decoded once (jsonrpc.Parse): mcp-go's
// server decodes the rest of what it serves.
type message struct {
	jsonrpc.Message
	line []byte
}

func parseMessage(line []byte) message { return message{Message: jsonrpc.Parse(line), line: line} }

func (c *stdio) serve(ctx context.Context, in io.Reader) error {
	// Requests outlive ctx by the shutdown grace: they run under a context of their own.
	reqCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	s := c.s
	if err := s.mcp.RegisterSession(reqCtx, c); err != nil {
		return fmt.Errorf("registering the stdio session: %w", err)
	}
	defer s.mcp.UnregisterSession(reqCtx, c.SessionID())
	s.openSession(c.SessionID(), c)
	reqCtx = s.mcp.WithContext(reqCtx, c)

	var notifier sync.WaitGroup
	notifier.Go(func() {
		for {
			select {
			case n := <-c.notes:
				c.write(n)
			case done := <-c.flushes:
				c.drainNotes()
				close(done)
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
				if raw := jsonrpc.IDOfEnds(head, tail); raw != nil {
					if id, err := mcp.ParseRequestId(raw); err == nil {
						c.writeError(id, mcp.INVALID_REQUEST, fmt.Sprintf("request over %d bytes, toolsift's limit", s.opts.MaxRequestBytes))
					}
				}
			default:
				if !c.dispatch(reqCtx, parseMessage(line)) {
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
func (c *stdio) dispatch(ctx context.Context, m message) bool {
	switch {
	case len(m.line) == 0 || m.Malformed && isBlank(m.line):
	case m.Malformed:
		c.writeError(mcp.RequestId{}, mcp.PARSE_ERROR, "Parse error")
	case m.Bad != "":
		c.writeError(mcp.RequestId{}, mcp.INVALID_REQUEST, "Invalid Request: "+m.Bad)
	case m.IsAnswer():
		c.answered(m)
	case m.IsRequest() && c.s.Refused(m.Message) != "":
		c.writeError(m.ID, mcp.METHOD_NOT_FOUND, c.s.Refused(m.Message))
	case m.IsRequest():
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
		}()
	default:
		// A notification: mcp-go's server takes it.
		c.handle(ctx, m)
	}
	return true
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// handle has mcp-go's server handle a message, and writes its answer, if any.
func (c *stdio) handle(ctx context.Context, m message) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("panic serving a request", "panic", r, "stack", string(debug.Stack()))
			if m.IsRequest() {
				c.writeError(m.ID, mcp.INTERNAL_ERROR, "internal error")
			}
		}
	}()
	resp := c.s.mcp.HandleMessage(ctx, m.line)
	if m.Method != string(mcp.MethodToolsList) {
		if resp != nil {
			c.write(resp)
		}
		return
	}
	c.mu.Lock()
	list, ok := c.lists[m.ID.String()]
	delete(c.lists, m.ID.String())
	c.mu.Unlock()
	if r, plain := resp.(mcp.JSONRPCResponse); ok && plain && isPlainList(r.Result) {
		c.writeLine(appendList(r.ID, list.forms))
	} else if resp != nil {
		c.write(resp)
	}
	if ok {
		list.written()
	}
}

// pendingList is a session's list that a tools/list request is being answered with.
type pendingList struct {
	forms   []*form
	written func()
}

// isPlainList reports a tools/list result that holds nothing but its tools.
func isPlainList(result any) bool {
	r, ok := result.(mcp.ListToolsResult)
	return ok && r.PaginatedResult == (mcp.PaginatedResult{})
}

// appendList is the answer to the tools/list request id, with forms: each tool as
// encoded once per catalog (form.raw), since encoding/json would check every byte of every
// tool again for each list, several times the cost of all the rest (docs/performance.md).
func appendList(id mcp.RequestId, forms []*form) []byte {
	rawID, _ := id.MarshalJSON()
	size := 64 + len(rawID)
	for _, f := range forms {
		size += len(f.raw()) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	b = append(b, `,"result":{"tools":[`...)
	for i, f := range forms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.raw()...)
	}
	return append(b, "]}}\n"...)
}

func (c *stdio) writeError(id mcp.RequestId, code int, msg string) {
	c.write(mcp.NewJSONRPCError(id, code, msg, nil))
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

// Flush returns once every notification mcp-go queued to the connection so far has been
// written, or after 200 ms: the notifier writes them one at a time, in the order queued,
// and answers a flush by writing what is queued before it.
func (c *stdio) Flush(ctx context.Context) {
	done := make(chan struct{})
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case c.flushes <- done:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	case <-c.closed:
		return
	}
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

// drainNotes writes the notifications queued now.
func (c *stdio) drainNotes() {
	for {
		select {
		case n := <-c.notes:
			c.write(n)
		default:
			return
		}
	}
}

// Listed keeps the list for the answer to request id, which handle writes, and counts it
// once written: the answer and a held tool_search's result are written by different
// goroutines, and the client must read them in that order.
func (c *stdio) Listed(_ context.Context, id any, forms []*form, written func()) {
	c.mu.Lock()
	c.lists[mcp.NewRequestId(id).String()] = pendingList{forms: forms, written: written}
	c.mu.Unlock()
}

// Sample asks the client's model, on the connection.
func (c *stdio) Sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return c.RequestSampling(ctx, req)
}
