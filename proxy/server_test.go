package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gate"
	"github.com/toolsift/toolsift/internal/mcptest"
	"github.com/toolsift/toolsift/upstream"
)

// fakeConn is an in-memory upstream: it lists the tools it was given and echoes calls.
type fakeConn struct{ tools []json.RawMessage }

func (f *fakeConn) Request(_ context.Context, method string, params any) (json.RawMessage, error) {
	switch method {
	case "tools/list":
		return json.Marshal(map[string]any{"tools": f.tools})
	case "tools/call":
		text, _ := json.Marshal(string(params.(json.RawMessage)))
		return json.RawMessage(`{"content":[{"type":"text","text":` + string(text) + `}]}`), nil
	}
	return nil, &upstream.RPCError{Code: -32601, Message: "method not found"}
}
func (f *fakeConn) Close() error { return nil }

// Lost never closes: these connections do not go away.
func (f *fakeConn) Lost() <-chan struct{} { return nil }
func (f *fakeConn) Err() error            { return nil }

func tool(name, desc string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`, name, desc))
}

// newTestProxy serves a proxy over two fake servers, with every connection made.
func newTestProxy(t *testing.T) *Server {
	t.Helper()
	servers := []config.Server{
		{Name: "gh", Prefix: "gh", Type: config.TypeStdio, Command: "x", AlwaysLoad: []string{"get_me"}},
		{Name: "chat", Prefix: "chat", Type: config.TypeStdio, Command: "y"},
	}
	conns := map[string]*fakeConn{
		"gh":   {tools: []json.RawMessage{tool("get_me", "Who am I"), tool("create_issue", "Create an issue"), tool("list_issues", "List issues")}},
		"chat": {tools: []json.RawMessage{tool("send_message", "Send a chat message"), tool("list_channels", "List channels")}},
	}
	return New(startFakes(t, servers, conns), Options{ListWait: 200 * time.Millisecond})
}

// startFakes starts a pool of the given servers, each served by its fake connection, and
// waits until every connection is made. The test's cleanup closes the pool.
func startFakes(t *testing.T, servers []config.Server, conns map[string]*fakeConn) *upstream.Pool {
	t.Helper()
	pool := upstream.NewPool(servers, upstream.Options{
		Dial: func(_ context.Context, srv config.Server, _ *upstream.Tail, _ upstream.Notify, _ upstream.Peer) (upstream.Conn, upstream.Info, error) {
			return conns[srv.Name], upstream.Info{Summary: srv.Name + " server"}, nil
		},
	})
	pool.Start(upstream.Hooks{})
	t.Cleanup(func() { pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if pending := pool.WaitStarted(ctx); len(pending) > 0 {
		t.Fatalf("fake servers did not start: %v", pending)
	}
	return pool
}

// sessionCount reports how many sessions s keeps state for.
func (s *Server) sessionCount() int {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	return len(s.sessions)
}

type httpClient struct {
	*client.Client
	mu      sync.Mutex
	changed int
}

func connect(t *testing.T, url string) *httpClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := &httpClient{Client: client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			c.mu.Lock()
			c.changed++
			c.mu.Unlock()
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (c *httpClient) names(t *testing.T) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func (c *httpClient) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	return mcptest.Call(t, c.Client, name, args)
}

// TestSessionsOverHTTP serves two sessions from one proxy process: unlocks, notifications
// and lists stay per session.
func TestSessionsOverHTTP(t *testing.T) {
	p := newTestProxy(t)
	hs := httptest.NewServer(server.NewStreamableHTTPServer(p.MCP(), server.WithStateful(true)))
	t.Cleanup(hs.Close) // after the clients' cleanups, which end their GET streams
	a, b := connect(t, hs.URL), connect(t, hs.URL)

	base := []string{"gh__get_me", "tool_search", "call_tool"}
	for _, c := range []*httpClient{a, b} {
		if got := c.names(t); !slices.Equal(got, base) {
			t.Fatalf("initial list = %q, want %q", got, base)
		}
	}
	res := a.call(t, "tool_search", map[string]any{"query": "send message", "max_results": 1})
	if res.IsError || !strings.Contains(mcptest.Text(res), "chat__send_message") {
		t.Fatalf("search: %s", mcptest.Text(res))
	}
	if got, want := a.names(t), append(slices.Clone(base), "chat__send_message"); !slices.Equal(got, want) {
		t.Errorf("a's list = %q, want %q", got, want)
	}
	if got := b.names(t); !slices.Equal(got, base) {
		t.Errorf("b sees a's unlock: %q", got)
	}
	res = b.call(t, "call_tool", map[string]any{"name": "gh__create_issue", "arguments": map[string]any{"x": "1"}})
	if res.IsError || !strings.Contains(mcptest.Text(res), `"name":"create_issue"`) || !strings.Contains(mcptest.Text(res), `"arguments":{"x":"1"}`) {
		t.Fatalf("b call_tool: %s", mcptest.Text(res))
	}
	if got, want := b.names(t), append(slices.Clone(base), "gh__create_issue"); !slices.Equal(got, want) {
		t.Errorf("b's list = %q, want %q", got, want)
	}
	if got, want := a.names(t), append(slices.Clone(base), "chat__send_message"); !slices.Equal(got, want) {
		t.Errorf("a's list changed by b: %q", got)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		a.mu.Lock()
		n := a.changed
		a.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed == 0 {
		t.Error("a got no list_changed for its unlock")
	}
}

// TestStableListForNewerProtocol checks that a request made under protocol 2026-07-28, which
// forbids tools/list varying per connection, sees no unlocked tools.
func TestStableListForNewerProtocol(t *testing.T) {
	p := newTestProxy(t)
	hs := httptest.NewServer(server.NewStreamableHTTPServer(p.MCP(), server.WithStateful(true)))
	t.Cleanup(hs.Close) // after the clients' cleanups, which end their GET streams
	a := connect(t, hs.URL)
	a.call(t, "tool_search", map[string]any{"query": "issues"})
	if len(a.names(t)) <= 3 {
		t.Fatal("legacy session unlocked nothing")
	}
	modern := map[string]any{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{"_meta": modern}})
	resp := p.MCP().HandleMessage(context.Background(), msg)
	out, _ := json.Marshal(resp)
	var got struct {
		Result struct {
			Tools []struct{ Name string }
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range got.Result.Tools {
		names = append(names, tl.Name)
	}
	if want := []string{"gh__get_me", "tool_search", "call_tool"}; !slices.Equal(names, want) {
		t.Errorf("modern tools/list = %q (%s), want %q", names, out, want)
	}
}

func TestPassthroughResult(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"a"}]}`,
		`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png","annotations":{"audience":["user"]}},{"type":"future","x":1}],"isError":true}`,
		`{"_meta":{"k":"v"},"content":[],"structuredContent":{"n":12345678901234567890}}`,
	} {
		res, err := passthroughResult(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("passthroughResult(%s): %v", raw, err)
		}
		out, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != raw {
			t.Errorf("passthroughResult(%s) re-encodes as %s", raw, out)
		}
	}
	if _, err := passthroughResult(json.RawMessage(`[1]`)); err == nil {
		t.Error("passthroughResult of an array: no error")
	}
}

func TestExposedToolKeepsFields(t *testing.T) {
	raw := json.RawMessage(`{"name":"t","title":"T","description":"d","inputSchema":{"type":"object","anyOf":[{"required":["a"]}],"$schema":"x"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"vendor/x":1}}`)
	ut, err := upstream.ParseTool(raw)
	if err != nil {
		t.Fatal(err)
	}
	ut.Exposed = "s__t"
	out, _ := json.Marshal(exposedTool(ut))
	want := `{"_meta":{"anthropic/alwaysLoad":true,"vendor/x":1},"annotations":{"readOnlyHint":true},"description":"d","inputSchema":{"type":"object","anyOf":[{"required":["a"]}],"$schema":"x"},"name":"s__t","outputSchema":{"type":"object"},"title":"T"}`
	if string(out) != want {
		t.Errorf("exposedTool =\n%s\nwant\n%s", out, want)
	}
}

func TestFirstParagraph(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"one\n\ntwo", 100, "one"},
		{"  lead\nsame para\n\nnext", 100, "lead\nsame para"},
		{"héllo", 2, "h…"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := firstParagraph(tt.in, tt.n); got != tt.want {
			t.Errorf("firstParagraph(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestDiscover checks, over stdio and over HTTP, that the 2026-07-28 probe is refused to
// the dual-era clients served better at 2025-11-25 (they then initialize there), and
// answered for every other client, so that a client that speaks only 2026-07-28 is served.
func TestDiscover(t *testing.T) {
	p := newTestProxy(t)
	discover := func(id int, client string) string {
		info := ""
		if client != "" {
			info = `,"io.modelcontextprotocol/clientInfo":{"name":"` + client + `","version":"1"}`
		}
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}%s}}}`, id, info)
	}
	refused := `"error":{"code":-32601,"message":"server/discover is not served to `
	answered := `"supportedVersions":["2026-07-28",`
	// A client whose list never changes is not told of tools appearing in it.
	stateless := `"instructions":"toolsift aggregates many MCP servers. Most of their tools are hidden until you search for them with tool_search; call what it finds through call_tool."`
	tests := []struct{ msg, want string }{
		{discover(1, "claude-code"), refused + `claude-code`},
		{discover(2, "copilot-cli"), refused + `copilot-cli`},
		{discover(3, ""), answered},
		{discover(33, ""), stateless},
		{discover(4, "some-modern-agent"), answered},
		// A name that only resembles a dual-era client's is not one.
		{discover(5, "Claude-Code"), answered},
		{`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"claude-code","version":"1"}}}`, `"protocolVersion":"2025-11-25"`},
		{`{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}`, `"result"`},
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- p.ServeStdio(context.Background(), inR, outW) }()
	out := bufio.NewReader(outR)
	for _, tt := range tests {
		fmt.Fprintln(inW, tt.msg)
		if line, _ := out.ReadString('\n'); !strings.Contains(line, tt.want) {
			t.Errorf("stdio: %s\n  answered %s, want %s", tt.msg, line, tt.want)
		}
	}
	inW.Close()
	<-served

	h, shutdown := gate.Handler(p, gate.Options{})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); shutdown(context.Background()) })
	for _, tt := range tests[:5] {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(tt.msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "server/discover")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(got), tt.want) {
			t.Errorf("HTTP: %s\n  answered %s, want %s", tt.msg, got, tt.want)
		}
	}
}

// TestHTTPSessionStateIsFreed ends one session with DELETE and lets another expire, and
// checks that the proxy forgets both.
func TestHTTPSessionStateIsFreed(t *testing.T) {
	p := newTestProxy(t)
	h, shutdown := gate.Handler(p, gate.Options{SessionIdleTimeout: 300 * time.Millisecond})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { shutdown(context.Background()) })
	sessions := p.sessionCount
	a := connect(t, hs.URL+"/mcp")
	a.call(t, "tool_search", map[string]any{"query": "issues"})
	b := connect(t, hs.URL+"/mcp")
	b.call(t, "tool_search", map[string]any{"query": "issues"})
	if n := sessions(); n != 2 {
		t.Fatalf("%d sessions tracked, want 2", n)
	}
	req, _ := http.NewRequest(http.MethodDelete, hs.URL+"/mcp", nil)
	req.Header.Set(server.HeaderKeySessionID, a.GetSessionId())
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v %v", resp, err)
	}
	if n := sessions(); n != 1 {
		t.Errorf("after DELETE, %d sessions tracked, want 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for sessions() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("idle session never expired: %d tracked", sessions())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMatchesTemplate(t *testing.T) {
	tests := []struct {
		template, uri string
		want          bool
	}{
		{"test://template/{id}/data", "test://template/123/data", true},
		{"test://template/{id}/data", "test://template//data", false},
		{"test://template/{id}/data", "test://template/1/2/data", false},
		{"demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/3", true},
		{"demo://x/{a}-{b}", "demo://x/1-2", true},
		{"file:///{path}", "file:///etc", true},
		{"a.b/{x}", "aXb/1", false}, // the dot is literal
		{"broken/{x", "broken/1", false},
		{"no/vars", "no/vars", true},
		{"no/vars", "no/varsX", false},
	}
	for _, tt := range tests {
		if got := matchesTemplate(tt.template, tt.uri); got != tt.want {
			t.Errorf("matchesTemplate(%q, %q) = %v, want %v", tt.template, tt.uri, got, tt.want)
		}
	}
}

// serveOne serves a proxy over one fake server, gh, on streamable HTTP, and returns the
// /mcp URL and a function that sends a notification from the server.
func serveOne(t *testing.T, gh *fakeConn) (url string, notify func(method string)) {
	t.Helper()
	return serveOneWith(t, gh, Options{ListWait: 50 * time.Millisecond})
}

// serveOneWith is serveOne with the proxy's options.
func serveOneWith(t *testing.T, gh *fakeConn, opts Options) (url string, notify func(method string)) {
	t.Helper()
	var mu sync.Mutex
	var n upstream.Notify // the server's, guarded by mu
	pool := upstream.NewPool([]config.Server{{Name: "gh", Prefix: "gh", Type: config.TypeStdio, Command: "x"}}, upstream.Options{
		Dial: func(_ context.Context, _ config.Server, _ *upstream.Tail, notify upstream.Notify, _ upstream.Peer) (upstream.Conn, upstream.Info, error) {
			mu.Lock()
			n = notify
			mu.Unlock()
			return gh, upstream.Info{}, nil
		},
	})
	p := New(pool, opts)
	pool.Start(upstream.Hooks{OnChange: p.CatalogChanged})
	t.Cleanup(func() { pool.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool.WaitStarted(ctx)
	h, shutdown := gate.Handler(p, gate.Options{})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	t.Cleanup(func() { shutdown(context.Background()) })
	return hs.URL + "/mcp", func(method string) {
		mu.Lock()
		send := n
		mu.Unlock()
		send(method, nil)
	}
}

// TestChangedToolsNotifyOnlyTheirSessions changes one upstream tool: the session that
// unlocked it is told its list changed; a session that did not is left alone.
func TestChangedToolsNotifyOnlyTheirSessions(t *testing.T) {
	gh := &fakeConn{tools: []json.RawMessage{tool("create_issue", "Create an issue"), tool("list_issues", "List issues")}}
	url, notify := serveOne(t, gh)

	a, b := connect(t, url), connect(t, url)
	a.call(t, "call_tool", map[string]any{"name": "gh__create_issue"})
	b.call(t, "call_tool", map[string]any{"name": "gh__list_issues"})
	time.Sleep(100 * time.Millisecond)
	count := func(c *httpClient) int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.changed
	}
	beforeA, beforeB := count(a), count(b)

	// The pool reads the tools only after the notification, so this write comes first.
	gh.tools = []json.RawMessage{tool("create_issue", "Create an issue, now with labels"), tool("list_issues", "List issues")}
	notify("notifications/tools/list_changed")

	deadline := time.Now().Add(3 * time.Second)
	for count(a) == beforeA && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if count(a) == beforeA {
		t.Error("the session that unlocked the changed tool got no list_changed")
	}
	time.Sleep(100 * time.Millisecond)
	if count(b) != beforeB {
		t.Errorf("a session whose tools did not change got %d list_changed", count(b)-beforeB)
	}
}

// TestRelistWithSameCatalogDisturbsNobody: a server that re-lists (or reconnects) with what
// it had sends no session any list_changed, of tools, prompts or resources.
func TestRelistWithSameCatalogDisturbsNobody(t *testing.T) {
	gh := &fakeConn{tools: []json.RawMessage{tool("create_issue", "Create an issue")}}
	url, notify := serveOne(t, gh)

	a := connect(t, url)
	var others atomic.Int32
	a.OnNotification(func(n mcp.JSONRPCNotification) {
		if strings.HasSuffix(n.Method, "/list_changed") {
			others.Add(1)
		}
	})
	a.call(t, "call_tool", map[string]any{"name": "gh__create_issue"})
	time.Sleep(100 * time.Millisecond)
	before := others.Load()
	notify("notifications/tools/list_changed")
	notify("notifications/prompts/list_changed")
	time.Sleep(300 * time.Millisecond) // a notification would arrive within milliseconds
	if got := others.Load() - before; got != 0 {
		t.Errorf("%d list_changed after a re-list that changed nothing", got)
	}
}

// TestDirectoryListsServersWithKnownTools: tool_search's description lists a server whose
// tools are known even while it starts or restarts, so that it does not change, and every
// prompt with it, each time one does.
func TestDirectoryListsServersWithKnownTools(t *testing.T) {
	desc := searchToolDef([]upstream.Status{
		{Name: "up", State: upstream.StateConnected, Tools: 3, Summary: "Up"},
		{Name: "lazy", State: upstream.StateIdle, Tools: 2},
		{Name: "cached", State: upstream.StateStarting, Tools: 4},
		{Name: "crashed", State: upstream.StateFailed, Tools: 5},
		{Name: "new", State: upstream.StateStarting},
		{Name: "broken", State: upstream.StateFailed},
		{Name: "off", State: upstream.StateDisabled, Tools: 9},
	}, "").Description
	servers, down, _ := strings.Cut(desc, "Not available right now:")
	for _, want := range []string{"- up (3 tools): Up", "- lazy (2 tools)", "- cached (4 tools)", "- crashed (5 tools)"} {
		if !strings.Contains(servers, want) {
			t.Errorf("servers part lacks %q:\n%s", want, desc)
		}
	}
	for _, want := range []string{"- new (starting)", "- broken (failed)"} {
		if !strings.Contains(down, want) {
			t.Errorf("unavailable part lacks %q:\n%s", want, desc)
		}
	}
	if strings.Contains(desc, "off") {
		t.Errorf("disabled server listed:\n%s", desc)
	}
}

// TestDirectoryIsBounded: with thousands of servers, tool_search's description (part of
// every model request) stays within a few kilobytes: summaries while they fit, then names,
// then a count; the first servers are always named.
func TestDirectoryIsBounded(t *testing.T) {
	for _, n := range []int{1, 40, 200, 10000} {
		var statuses []upstream.Status
		for i := range n {
			statuses = append(statuses, upstream.Status{Name: fmt.Sprintf("server-%05d", i), State: upstream.StateConnected, Tools: 12,
				Summary: "Reads and writes the records of a service that has a long description " + strings.Repeat("x", 100)})
		}
		statuses = append(statuses, upstream.Status{Name: "down", State: upstream.StateFailed})
		desc := searchToolDef(statuses, "").Description
		if len(desc) > 8000 {
			t.Errorf("%d servers: description is %d bytes, want at most 8000", n, len(desc))
		}
		if !strings.Contains(desc, "- server-00000 (12 tools): Reads") {
			t.Errorf("%d servers: the first server is not listed with its summary:\n%.300s", n, desc)
		}
		listed := strings.Count(desc, "server-")
		more := 0
		if i := strings.Index(desc, "- and "); i >= 0 {
			fmt.Sscanf(desc[i:], "- and %d more servers", &more)
		}
		if listed+more != n {
			t.Errorf("%d servers: %d named and %d counted", n, listed, more)
		}
		if n <= 40 && more > 0 {
			t.Errorf("%d servers: %d left out, want all named", n, more)
		}
		if !strings.Contains(desc, "down (failed)") && !strings.Contains(desc, "and 1 more servers") {
			t.Errorf("%d servers: the unavailable server is neither named nor counted", n)
		}
	}
}

// TestMetaToolNamesAreReserved: upstream tools are kept off the meta-tools' names.
func TestMetaToolNamesAreReserved(t *testing.T) {
	for _, name := range []string{SearchTool, CallTool} {
		if !slices.Contains(upstream.Reserved, name) {
			t.Errorf("upstream.Reserved = %q, want it to hold %q", upstream.Reserved, name)
		}
	}
}

// TestQueryTooLong: a query over maxQueryBytes is refused, not searched, logged or echoed.
func TestQueryTooLong(t *testing.T) {
	p := newTestProxy(t)
	hs := httptest.NewServer(server.NewStreamableHTTPServer(p.MCP(), server.WithStateful(true)))
	t.Cleanup(hs.Close)
	res := connect(t, hs.URL).call(t, SearchTool, map[string]any{"query": strings.Repeat("issue ", 1<<17)})
	if !res.IsError || !strings.Contains(mcptest.Text(res), "the query is 786432 bytes; at most 2000") || len(mcptest.Text(res)) > 4000 {
		t.Errorf("a 768 KB query = %.300s", mcptest.Text(res))
	}
}

// TestListAllSwitchesToSearch: under toolSearch: auto, a session listed every tool while
// they fit; once the server offers more than the budget, the session is told, and re-lists
// the meta-tools instead.
func TestListAllSwitchesToSearch(t *testing.T) {
	gh := &fakeConn{tools: []json.RawMessage{tool("create_issue", "Create an issue")}}
	url, notify := serveOneWith(t, gh, Options{ListWait: 50 * time.Millisecond, ListAllUnder: 200})
	a := connect(t, url)
	if got := a.names(t); !slices.Equal(got, []string{"gh__create_issue"}) {
		t.Fatalf("tools/list while one tool fits = %q", got)
	}
	waitChanged := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			a.mu.Lock()
			changed := a.changed
			a.mu.Unlock()
			if changed >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no list_changed when %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Every tool is listed, so a change to any concerns the session, though the directory
	// of servers (one tool) stays the same.
	gh.tools = []json.RawMessage{tool("create_issue", "Create an issue, with labels")} // read only after the notification
	notify("notifications/tools/list_changed")
	waitChanged(1, "a listed tool changed")

	var many []json.RawMessage
	for i := range 20 {
		many = append(many, tool(fmt.Sprintf("tool_%d", i), strings.Repeat("A long description. ", 5)))
	}
	gh.tools = many
	notify("notifications/tools/list_changed")
	waitChanged(2, "the catalog outgrew the budget")
	if got := a.names(t); !slices.Equal(got, []string{SearchTool, CallTool}) {
		t.Errorf("tools/list past the budget = %q, want the meta-tools", got)
	}
}
