package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioConn is a stdio connection: its transport, and its one client session as mcp-go's
// server sees it.
//
// It is toolsift's own rather than mcp-go's StdioServer, which reads each line on a new
// goroutine, decodes a request five to eight times, and hands tool calls to a pool of
// workers. On two cores each hand-off between goroutines wakes a thread, and together they
// cost more than the search a request asks for. Here one goroutine reads. It serves a quick
// request itself (see quick), and hands any other to a worker waiting for one (or a new
// worker): one hand-off, and to a goroutine whose stack is already grown.
type stdioConn struct {
	s     *Server
	out   *responseWatcher
	notes chan mcp.JSONRPCNotification // the session's notifications, written in order

	initialized atomic.Bool
	level       atomic.Value // mcp.LoggingLevel
	info        atomic.Value // mcp.Implementation
	caps        atomic.Value // mcp.ClientCapabilities
	version     atomic.Value // string: the protocol version

	jobs    chan func()   // to the idle workers (see work)
	idle    atomic.Int32  // the workers waiting for a job
	nextID  atomic.Int64  // of toolsift's own requests to the client
	closed  chan struct{} // closed when the connection stops serving
	mu      sync.Mutex    // guards pending and stopping, and orders served.Add before Wait
	pending map[int64]chan stdioAnswer
	served  sync.WaitGroup // requests being served
	workers sync.WaitGroup // the goroutines of work
	// stopping is set once the connection serves no more requests.
	stopping bool

	// The reading goroutine's: set by serve before it starts, and then only read.
	readCtx context.Context
	input   *drainReader
	end     chan error // the reader's end, sent by whichever goroutine reads last
	// inline is the state of the request the reader serves itself (inlineNone,
	// inlineServing, inlineHandedOver), and inlineSince its start (see now); handover hands
	// reading to a new goroutine when that request runs past inlineFor, and is armed while
	// handoverArmed is set.
	inline        atomic.Int32
	inlineSince   atomic.Int64
	handover      *time.Timer
	handoverArmed atomic.Bool
	born          time.Time // the clock now reads from

	heldMu    sync.Mutex // guards held and heldTimer, and is held while they are written
	held      []byte     // notifications held back (see notify)
	heldTimer *time.Timer
	writeErrs atomic.Int32 // failed writes to the client
}

func newStdioConn(s *Server, out *responseWatcher) *stdioConn {
	return &stdioConn{s: s, out: out, notes: make(chan mcp.JSONRPCNotification, 100),
		pending: map[int64]chan stdioAnswer{}, closed: make(chan struct{}), jobs: make(chan func()),
		born: time.Now()}
}

// stdioAnswer is the client's answer to a request of toolsift's.
type stdioAnswer struct {
	result json.RawMessage
	err    *jsonrpcError
}

type jsonrpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

var (
	_ server.SessionWithLogging         = (*stdioConn)(nil)
	_ server.SessionWithClientInfo      = (*stdioConn)(nil)
	_ server.SessionWithProtocolVersion = (*stdioConn)(nil)
	_ server.SessionWithSampling        = (*stdioConn)(nil)
	_ server.SessionWithElicitation     = (*stdioConn)(nil)
	_ server.SessionWithRoots           = (*stdioConn)(nil)
)

// serve serves the connection until input ends or listen is done: then it cancels the
// requests still being served and waits for them.
func (c *stdioConn) serve(listen context.Context, input *drainReader) error {
	mcpServer := c.s.mcp
	if err := mcpServer.RegisterSession(listen, c); err != nil {
		return fmt.Errorf("registering the stdio session: %w", err)
	}
	defer mcpServer.UnregisterSession(listen, c.SessionID())
	ctx := mcpServer.WithContext(listen, c)
	sess := c.s.sessionFrom(ctx)
	sess.mu.Lock()
	sess.watched = true
	sess.mu.Unlock()
	ctx = withPendingSplices(ctx, c.out.lists)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var notified sync.WaitGroup
	notified.Go(func() {
		for {
			select {
			case n := <-c.notes:
				if n.Method == flushMethod {
					close(n.Params.AdditionalFields["done"].(chan struct{})) // all before it are out
					continue
				}
				c.write(n)
			case <-ctx.Done():
				return
			}
		}
	})
	// The reader may be blocked on input after listen is done: it ends when input does (serve
	// closes a pollable stdin on return; another input, a terminal, ends with the process),
	// and serves nothing more, since input then gives no more lines.
	// Reading may move to another goroutine (see serveInline): whichever reads last reports
	// the end of input on c.end.
	c.readCtx, c.input, c.end = ctx, input, make(chan error, 1)
	c.handover = time.AfterFunc(time.Hour, c.takeOver)
	c.handover.Stop()
	defer c.handover.Stop()
	go c.read()
	var err error
	select {
	case err = <-c.end:
	case <-listen.Done():
	}
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	close(c.closed)
	cancel()
	c.served.Wait()
	c.workers.Wait()
	notified.Wait()
	c.flushHeld() // and stops its timer: held and the timer are armed together
	return err
}

// read reads and dispatches messages until input ends, and then sends its error, if any, on
// c.end; or until a quick request it serves takes long enough for reading to move to another
// goroutine (see serveInline).
func (c *stdioConn) read() {
	for {
		m, err := c.input.next()
		if err == io.EOF {
			c.end <- nil
			return
		}
		if err != nil {
			c.end <- fmt.Errorf("reading stdin: %w", err)
			return
		}
		if !c.dispatch(c.readCtx, m) {
			return
		}
	}
}

// inlineFor is how long a quick request served by the reader (see serveInline) may keep
// the messages after it unread.
const inlineFor = time.Millisecond

const (
	inlineNone int32 = iota
	inlineServing
	inlineHandedOver
)

// serveInline serves a quick request on the reading goroutine, and reports whether that
// goroutine still reads. A worker costs a hand-off: on two cores the worker runs on a
// thread that must be woken, which measured 10 µs of toolsift's CPU per ping and 20 to 100
// µs per search at 10,000 tools. Quick is a guess, not a promise (a
// write to a client that does not read blocks), so if the request runs past inlineFor a
// new goroutine takes over reading (see takeOver). One goroutine reads at a time: each
// request served inline is either taken over once, or its server reads on.
func (c *stdioConn) serveInline(job func()) bool {
	c.inlineSince.Store(c.now())
	c.inline.Store(inlineServing)
	// One timer for a run of quick requests, not one for each: arming and stopping a timer
	// each request wakes the poller's thread once more each.
	if c.handoverArmed.CompareAndSwap(false, true) {
		c.handover.Reset(inlineFor)
	}
	job()
	// The timer may have found this request running long, or read an earlier request's
	// start: either way it handed reading over, and this goroutine must not read.
	return c.inline.CompareAndSwap(inlineServing, inlineNone)
}

// takeOver, the handover timer's function, starts a new reading goroutine if the reader
// has been serving a request for inlineFor, and arms the timer again for the request
// being served, if any.
func (c *stdioConn) takeOver() {
	// Disarmed before the state is read: a request that starts after this sees the timer
	// disarmed and arms it, and one that started before is seen serving here.
	c.handoverArmed.Store(false)
	if c.inline.Load() != inlineServing {
		return
	}
	if left := inlineFor - time.Duration(c.now()-c.inlineSince.Load()); left > 0 {
		if c.handoverArmed.CompareAndSwap(false, true) {
			c.handover.Reset(left)
		}
		return
	}
	if c.inline.CompareAndSwap(inlineServing, inlineHandedOver) {
		go c.read()
	}
}

// now is the time since the connection was made, in ns, by the monotonic clock: a step of
// the wall clock must not delay a handover.
func (c *stdioConn) now() int64 { return int64(time.Since(c.born)) }

// dispatch hands a request to a worker (see work), or serves it itself if it is quick, and
// serves a notification, or an answer to toolsift, at once, in the order read. It reports
// false when reading has moved to another goroutine (see serveInline).
func (c *stdioConn) dispatch(ctx context.Context, m message) bool {
	line := m.line
	if m.err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(m.err, &typeErr) {
			// JSON, but not JSON-RPC as toolsift reads it (a method that is no string):
			// mcp-go's server answers it as it sees fit, with its id if it has one.
			c.handle(ctx, line, nil)
			return true
		}
		c.write(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "Parse error", nil))
		return true
	}
	switch {
	case m.method == "" && len(m.id) > 0 && (m.result != nil || m.errObj != nil):
		a := stdioAnswer{result: m.result}
		if m.errObj != nil {
			a.err = &jsonrpcError{Code: mcp.INTERNAL_ERROR, Message: string(m.errObj)}
			_ = json.Unmarshal(m.errObj, a.err) // a malformed error is still an error
		}
		c.answer(m.id, a)
	case m.isRequest(): // owed an answer since drainReader read it
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return true
		}
		c.served.Add(1)
		c.mu.Unlock()
		job := func() {
			defer c.served.Done()
			c.handle(ctx, line, m.id)
		}
		if c.s.quick(ctx, m.method, line) {
			return c.serveInline(job)
		}
		select {
		case c.jobs <- job: // an idle worker takes it
		default:
			// Added before the job is done, so before served.Wait returns in serve.
			c.workers.Add(1)
			go c.work(job)
		}
	default:
		c.handle(ctx, line, nil)
	}
	return true
}

// work does job, then the jobs it is given while it is one of maxIdleWorkers or fewer
// waiting, until the connection closes. A worker that stays keeps the stack its first
// request grew: a new goroutine would grow it again, copying it three or four times.
func (c *stdioConn) work(job func()) {
	defer c.workers.Done()
	for {
		job()
		if c.idle.Add(1) > maxIdleWorkers {
			c.idle.Add(-1)
			return
		}
		select {
		case job = <-c.jobs:
			c.idle.Add(-1)
		case <-c.closed:
			c.idle.Add(-1)
			return
		}
	}
}

// maxIdleWorkers bounds the workers a stdio connection keeps waiting for requests.
const maxIdleWorkers = 4

// handle has mcp-go's server handle a message and writes its response, if any.
func (c *stdioConn) handle(ctx context.Context, line, id json.RawMessage) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("panic serving a request", "panic", r, "stack", string(debug.Stack()))
			if id != nil {
				c.out.Write(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"internal error"}}`+"\n", id, mcp.INTERNAL_ERROR))
			}
		}
	}()
	if resp := c.s.mcp.HandleMessage(ctx, line); resp != nil {
		c.write(resp)
	}
}

// write writes msg, one JSON-RPC message, on a line, after any notification held back.
func (c *stdioConn) write(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		c.s.log.Error("encoding a message to the client", "err", err)
		return
	}
	c.writeLine(append(b, '\n'))
}

// writeLine writes line, one JSON-RPC message and its newline (nil for none), after any
// notification held back. Taking what is held and writing it are one step, under heldMu: a
// message written meanwhile would overtake the notifications held.
func (c *stdioConn) writeLine(line []byte) {
	c.heldMu.Lock()
	defer c.heldMu.Unlock()
	held := c.held
	if held != nil {
		c.held = nil
		c.heldTimer.Stop() // no wake-up for nothing
	}
	if _, err := c.out.writeAfter(held, line); err != nil {
		c.writeFailed(err)
	}
}

// writeFailed logs a failed write to the client, the first at warn: stdout is a dup of the
// process's, so a client gone is EPIPE here rather than a SIGPIPE that ends toolsift.
func (c *stdioConn) writeFailed(err error) {
	level := slog.LevelDebug
	if c.writeErrs.Add(1) == 1 {
		level = slog.LevelWarn
	}
	c.s.log.Log(context.Background(), level, "writing to the client", "error", err)
}

// answer hands the client's answer to the request of toolsift's it is for.
func (c *stdioConn) answer(rawID json.RawMessage, a stdioAnswer) {
	id, err := strconv.ParseInt(string(rawID), 10, 64)
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id) // a second answer to it goes nowhere
	c.mu.Unlock()
	if err != nil || !ok {
		c.s.log.Debug("an answer to no request of toolsift's", "id", string(rawID))
		return
	}
	ch <- a // buffered for the one answer
}

// request sends the client a request and decodes its answer's result into result.
func (c *stdioConn) request(ctx context.Context, method string, params, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan stdioAnswer, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	c.write(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{mcp.JSONRPC_VERSION, id, method, params})
	select {
	case a := <-ch:
		if a.err != nil {
			return fmt.Errorf("%s: the client answered error %d: %s", method, a.err.Code, a.err.Message)
		}
		if err := json.Unmarshal(a.result, result); err != nil {
			return fmt.Errorf("%s: decoding the client's answer: %w", method, err)
		}
		return nil
	case <-c.closed:
		return fmt.Errorf("%s: the client is gone", method)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *stdioConn) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := c.request(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, &res); err != nil {
		return nil, err
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("sampling: the client's answer: %w", err)
	}
	res.Content = content
	return &res, nil
}

func (c *stdioConn) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var res mcp.ElicitationResult
	if err := c.request(ctx, string(mcp.MethodElicitationCreate), req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (c *stdioConn) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var res mcp.ListRootsResult
	if err := c.request(ctx, string(mcp.MethodListRoots), req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SessionID is "stdio", as mcp-go's: a stdio connection has one session.
func (c *stdioConn) SessionID() string { return "stdio" }

func (c *stdioConn) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }

func (c *stdioConn) Initialize() {
	c.level.Store(mcp.LoggingLevelError)
	c.initialized.Store(true)
}

func (c *stdioConn) Initialized() bool { return c.initialized.Load() }

func (c *stdioConn) SetLogLevel(level mcp.LoggingLevel) { c.level.Store(level) }

func (c *stdioConn) GetLogLevel() mcp.LoggingLevel {
	level, _ := c.level.Load().(mcp.LoggingLevel)
	return cmp.Or(level, mcp.LoggingLevelError)
}

func (c *stdioConn) GetClientInfo() mcp.Implementation {
	info, _ := c.info.Load().(mcp.Implementation)
	return info
}

func (c *stdioConn) SetClientInfo(info mcp.Implementation) { c.info.Store(info) }

func (c *stdioConn) GetClientCapabilities() mcp.ClientCapabilities {
	caps, _ := c.caps.Load().(mcp.ClientCapabilities)
	return caps
}

func (c *stdioConn) SetClientCapabilities(caps mcp.ClientCapabilities) { c.caps.Store(caps) }

func (c *stdioConn) ProtocolVersion() string {
	v, _ := c.version.Load().(string)
	return v
}

func (c *stdioConn) SetProtocolVersion(v string) { c.version.Store(v) }

// quick reports whether a request, line, is one toolsift answers from memory, waiting on
// nothing but the CPU: a ping, a tools/list, or a tool_search that neither holds its result
// for the client's re-list, nor asks its model, nor ranks through an embeddings API, once
// the servers have started. Only a tools/call's line that names tool_search is decoded again:
// keeping every message's params from the first decoding would copy them all.
func (s *Server) quick(ctx context.Context, method string, line []byte) bool {
	switch method {
	case "ping", "tools/list":
		return true
	case "tools/call":
		// Most calls are upstream tools': their lines, arguments and all, need no decoding.
		if s.opts.Embeddings != nil || !bytes.Contains(line, []byte(SearchTool)) {
			return false
		}
		var m struct {
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.Params.Name != SearchTool {
			return false
		}
		sess := s.sessionFrom(ctx)
		return !sess.relists() && !s.asksModel(sess) && s.startupDone()
	}
	return false
}
