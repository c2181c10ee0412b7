package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/trace"
	"github.com/toolsift/toolsift/oauth"
)

// Conn is one live connection to an upstream server. Methods may be called concurrently.
type Conn interface {
	// Request sends one JSON-RPC request and returns the raw result. An error answer is an
	// *RPCError; a connection that has gone away is ErrClosed. When ctx ends first, the
	// server is told to cancel the request.
	Request(ctx context.Context, method string, params any) (json.RawMessage, error)
	// Close ends the connection; for a stdio server it stops the process.
	Close() error
	// Lost is closed when the connection goes away: a stdio server exited, an HTTP server
	// forgot the session, or Close was called.
	Lost() <-chan struct{}
	// Err says why, once Lost is closed.
	Err() error
}

// Info describes a connected server.
type Info struct {
	// Summary is one line about the server: its instructions' first line, or its title.
	Summary string
	// Prompts, Resources and Logging report the server's capabilities of those names.
	Prompts, Resources, Logging bool
}

// Notify receives the notifications a server sends: method and raw params.
type Notify func(method string, params json.RawMessage)

// ErrClosed reports a call on a connection that has gone away.
var ErrClosed = errors.New("connection closed")

// ErrSessionLost reports a request an HTTP server refused because it no longer knows the
// session (404). The server did not act on it, so it is safe to send again on a new session.
var ErrSessionLost = fmt.Errorf("session ended by the server: %w", ErrClosed)

// DialFunc connects to srv and completes the MCP handshake. stderr receives a stdio server's
// standard error; notify receives the server's notifications.
// peer, if not nil, answers the server's sampling and elicitation requests.
type DialFunc func(ctx context.Context, srv config.Server, stderr *Tail, notify Notify, peer Peer) (Conn, Info, error)

// Peer answers the requests a server makes of its client.
type Peer interface {
	client.SamplingHandler
	client.ElicitationHandler
	client.RootsHandler
}

// Dialer returns the DialFunc for real servers, which introduces itself as toolsift of the
// given version. tokens, if not nil, signs in to the HTTP and SSE servers that ask for
// OAuth (see SignsIn), as the server's own sign-in unless the dial's context names another
// (withSource).
func Dialer(version string, tokens *oauth.Tokens) DialFunc {
	return func(ctx context.Context, srv config.Server, stderr *Tail, notify Notify, peer Peer) (Conn, Info, error) {
		src := sourceFrom(ctx)
		if src == nil && tokens != nil && SignsIn(srv) {
			src = tokens.Source(srv.Name, srv.URL, srv.OAuth)
		}
		return dial(ctx, srv, version, stderr, notify, peer, src)
	}
}

// SignsIn reports whether toolsift may sign in to srv with OAuth: an HTTP or SSE server
// given no Authorization header of the user's own.
func SignsIn(srv config.Server) bool {
	if srv.Type != config.TypeHTTP && srv.Type != config.TypeSSE {
		return false
	}
	for k := range srv.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// dial is Dialer's DialFunc: it starts a stdio server's process, or opens the HTTP or SSE
// transport, then initializes the session.
func dial(ctx context.Context, srv config.Server, version string, stderr *Tail, notify Notify, peer Peer, src *oauth.Source) (Conn, Info, error) {
	var tr transport.Interface
	var proc *process
	switch srv.Type {
	case config.TypeStdio:
		var err error
		if proc, err = startProcess(srv, stderr); err != nil {
			return nil, Info{}, err
		}
		// mcp-go's transports log through the default logger; so does the guard.
		in := &stdinWriter{proc: proc, timeout: cmp.Or(srv.CallTimeout, DefaultCallTimeout)}
		tr = transport.NewIO(newLineGuard(proc.stdout, srv.MaxResultBytes, slog.Default().With("upstream", srv.Name)), in, nil)
	case config.TypeHTTP:
		// The GET stream is where a server sends what is not an answer to a request in
		// flight: its requests mid-call (sampling, elicitation, roots) and its notices. A
		// server that offers none answers 405 and is not asked again. The transport's own
		// lines (its retries while a server is down) go to the debug log.
		t, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPHeaders(srv.Headers), transport.WithHTTPBasicClient(httpClient(srv, src)),
			transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(debugOnly{slog.Default().Handler()}).With("upstream", srv.Name)))
		if err != nil {
			return nil, Info{}, err
		}
		tr = t
	case config.TypeSSE:
		t, err := transport.NewSSE(srv.URL, transport.WithHeaders(srv.Headers), transport.WithHTTPClient(httpClient(srv, src)))
		if err != nil {
			return nil, Info{}, err
		}
		tr = t
	default:
		return nil, Info{}, fmt.Errorf("unknown server type %q", srv.Type)
	}
	opts := []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	if peer != nil {
		// Setting the handlers also advertises the sampling, elicitation and roots
		// capabilities.
		opts = append(opts, client.WithSamplingHandler(peer), client.WithElicitationHandler(peer), client.WithRootsHandler(peer))
	}
	c := &conn{client: client.NewClient(tr, opts...), tr: tr, proc: proc, lost: make(chan struct{})}
	if proc != nil {
		// Ends when the process does, which Close makes sure of.
		go func() {
			<-proc.exited
			if proc.err != nil {
				c.markLost(fmt.Errorf("process exited: %v", proc.err))
			} else {
				c.markLost(errors.New("process exited"))
			}
		}()
	}
	if sse, ok := tr.(*transport.SSE); ok {
		sse.SetConnectionLostHandler(func(err error) { c.markLost(fmt.Errorf("event stream lost: %v", err)) })
	}
	// The transport keeps this context for the life of the connection (a stdio server's
	// requests, an SSE stream), so it is not the dial's deadline.
	if err := c.client.Start(context.WithoutCancel(ctx)); err != nil {
		_ = c.Close()
		return nil, Info{}, fmt.Errorf("starting: %w", err)
	}
	c.client.OnNotification(func(n mcp.JSONRPCNotification) {
		if notify == nil {
			return
		}
		params, err := json.Marshal(n.Params)
		if err != nil {
			return
		}
		notify(n.Method, params)
	})
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "toolsift", Version: version}
	res, err := c.client.Initialize(ctx, req)
	if err != nil {
		_ = c.Close()
		if signIn := signInError(err); signIn != nil {
			return nil, Info{}, signIn
		}
		return nil, Info{}, fmt.Errorf("initializing: %w", err)
	}
	caps := res.Capabilities
	return c, Info{Summary: summary(res), Prompts: caps.Prompts != nil, Resources: caps.Resources != nil, Logging: caps.Logging != nil}, nil
}

// httpClient is the HTTP client of an HTTP or SSE server: bounded answers (see
// limitedClient), its OAuth sign-in, if src is not nil, and the caller's trace context.
func httpClient(srv config.Server, src *oauth.Source) *http.Client {
	hc := limitedClient(srv.MaxResultBytes)
	if src != nil {
		hc.Transport = &oauth.Transport{Base: hc.Transport, Source: src}
	}
	// The caller's trace goes on to the server (W3C traceparent).
	hc.Transport = trace.Transport{Base: hc.Transport}
	return hc
}

// signInError returns the sign-in error err carries, alone: its message is the one to show
// (it names the command to run), without the transport's wrapping, which quotes the URL.
func signInError(err error) error {
	var needs *oauth.NeedsLoginError
	if errors.As(err, &needs) {
		return needs
	}
	var scope *oauth.ScopeError
	if errors.As(err, &scope) {
		return scope
	}
	return nil
}

// summary describes a server in one line: the first line of its instructions, unless that
// is a Markdown heading, then its title, then its name.
func summary(res *mcp.InitializeResult) string {
	if line, _, _ := strings.Cut(strings.TrimSpace(res.Instructions), "\n"); line != "" && !strings.HasPrefix(line, "#") {
		return line
	}
	if res.ServerInfo.Title != "" {
		return res.ServerInfo.Title
	}
	return res.ServerInfo.Name
}

// envList turns env into the KEY=value form of exec.Cmd.Env.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// conn is the Conn of the real transports.
type conn struct {
	client *client.Client
	tr     transport.Interface
	proc   *process // a stdio server's process; nil for HTTP and SSE
	nextID atomic.Int64
	closer sync.Once
	lost   chan struct{} // closed by markLost
	loser  sync.Once
	why    error // set before lost is closed
}

// Lost is closed by markLost.
func (c *conn) Lost() <-chan struct{} { return c.lost }

// Err returns why the connection went away, or nil while it has not.
func (c *conn) Err() error {
	select {
	case <-c.lost:
		return c.why
	default:
		return nil
	}
}

// markLost records why the connection went away and closes Lost; only the first call
// counts.
func (c *conn) markLost(why error) {
	c.loser.Do(func() {
		c.why = why
		close(c.lost)
	})
}

// Request sends the request on the transport itself, so that results come back as the raw
// bytes the server sent. IDs are strings, apart from the client's numeric ones.
func (c *conn) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := mcp.NewRequestId(fmt.Sprintf("toolsift-%d", c.nextID.Add(1)))
	resp, err := c.tr.SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params,
	})
	if err != nil {
		if ctx.Err() != nil {
			c.cancel(id, ctx.Err())
			return nil, ctx.Err()
		}
		if signIn := signInError(err); signIn != nil {
			var needs *oauth.NeedsLoginError
			if errors.As(signIn, &needs) {
				// Nothing works until the user signs in: the supervisor waits for that.
				c.markLost(signIn)
			}
			return nil, signIn
		}
		if errors.Is(err, transport.ErrTransportClosed) {
			return nil, fmt.Errorf("%s: %w", method, ErrClosed)
		}
		var unreachable *url.Error
		if c.proc == nil && errors.As(err, &unreachable) {
			// The HTTP server is down or went away mid-answer: reconnect, so that its state
			// shows and a call waits for it to come back, as for a crashed process.
			c.markLost(fmt.Errorf("unreachable: %v", unreachable.Err))
			return nil, fmt.Errorf("%s: %w", method, ErrClosed)
		}
		if errors.Is(err, transport.ErrSessionTerminated) {
			// The server restarted, or expired our session: it never saw this request.
			c.markLost(ErrSessionLost)
			return nil, fmt.Errorf("%s: %w", method, ErrSessionLost)
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	return resp.Result, nil
}

// cancel tells the server to stop working on a request the caller gave up on.
func (c *conn) cancel(id mcp.RequestId, reason error) {
	_ = c.tr.SendNotification(context.Background(), mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: "notifications/cancelled",
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{
				"requestId": id, "reason": reason.Error(),
			}},
		},
	})
}

// RPCError is a JSON-RPC error answer from an upstream server.
type RPCError struct {
	Code    int
	Message string
}

// Error says the error's code and message.
func (e *RPCError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

// listPage is one page of a list result, its items kept as the server sent them. It is what
// decodePage falls back on.
type listPage struct {
	Tools             []json.RawMessage `json:"tools"`
	Prompts           []json.RawMessage `json:"prompts"`
	Resources         []json.RawMessage `json:"resources"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
	NextCursor        json.RawMessage   `json:"nextCursor"`
}

// pageKeys are the JSON names of listPage's fields.
var pageKeys = [...]string{"tools", "prompts", "resources", "resourceTemplates", "nextCursor"}

// list returns the page's items of the named list.
func (p *listPage) list(field string) []json.RawMessage {
	switch field {
	case "tools":
		return p.Tools
	case "prompts":
		return p.Prompts
	case "resources":
		return p.Resources
	case "resourceTemplates":
		return p.ResourceTemplates
	}
	panic("upstream: no list " + field)
}

// listPages returns every item of a paginated list (tools/list, prompts/list, …), following
// cursors, each exactly as the server sent it. field names the result's array.
func listPages(ctx context.Context, c Conn, method, field string) ([]json.RawMessage, error) {
	var items []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := c.Request(ctx, method, params)
		if err != nil {
			return nil, err
		}
		page, nextRaw, err := decodePage(method, field, raw)
		if err != nil {
			return nil, err
		}
		items = append(items, page...)
		var next string
		if len(nextRaw) > 0 {
			_ = json.Unmarshal(nextRaw, &next)
		}
		if next == "" {
			return items, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: cursor %q repeats", method, next)
		}
		seen[next] = true
		cursor = next
	}
}

// decodePage returns the items of the list named field on one page of a list result, each
// exactly as the server sent it and valid JSON, and the page's raw nextCursor.
func decodePage(method, field string, raw json.RawMessage) (items []json.RawMessage, next json.RawMessage, err error) {
	// A page is most of what a server sends: it is scanned for its items (splitPage), and
	// only a page that is unusual is decoded by encoding/json, whose errors and quirks are
	// what this function is held to.
	if items, next, ok := splitPage(raw, field); ok {
		return items, next, nil
	}
	var page listPage
	if err := json.Unmarshal(raw, &page); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &typeErr) || typeErr.Field == "":
			return nil, nil, fmt.Errorf("%s: decoding result: %w", method, err)
		case typeErr.Field == field:
			return nil, nil, fmt.Errorf("%s: decoding %s: %w", method, field, err)
		}
		// Another list than the one asked for is no concern of this one.
	}
	return page.list(field), page.NextCursor, nil
}

// splitPage returns what json.Unmarshal into a listPage makes of a page, without copying: the
// items of the list named field and the raw nextCursor, as slices of raw. It reports false
// for a page it cannot be sure of: one that is not valid JSON or not an object, that names a
// member of listPage twice or as only encoding/json would match it (in another case, with an
// escape), or whose list is neither an array nor null.
func splitPage(raw json.RawMessage, field string) (items []json.RawMessage, next json.RawMessage, ok bool) {
	if !validJSON(raw) {
		return nil, nil, false
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, nil, false
	}
	ok = eachKnownMember(raw, i, pageKeys[:], func(k int, value []byte) bool {
		switch pageKeys[k] {
		case field:
			if value[0] == 'n' { // null
				return true
			}
			return value[0] == '[' && eachElement(value, 0, func(item []byte) bool {
				items = append(items, item)
				return true
			})
		case "nextCursor":
			next = value
		}
		// Another list than the one asked for is no concern of this one, whatever it is.
		return true
	})
	if !ok {
		return nil, nil, false
	}
	return items, next, true
}

// Close ends the connection and, for a stdio server, stops its process and reaps it. It is
// idempotent.
func (c *conn) Close() error {
	var err error
	c.closer.Do(func() {
		err = c.client.Close()
		if c.proc != nil {
			err = errors.Join(err, c.proc.Close())
			// The process has exited: let its exit status be the reason, as it is when it
			// crashed and this Close only follows.
			<-c.lost
		}
		c.markLost(errors.New("closed by toolsift"))
	})
	return err
}

// debugOnly logs every record at debug level: for a library's lines that are news to a
// developer, not to a user.
type debugOnly struct{ h slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.h.WithAttrs(as)} }
func (d debugOnly) WithGroup(g string) slog.Handler       { return debugOnly{d.h.WithGroup(g)} }
