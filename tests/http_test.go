package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolsift/toolsift/internal/mcptest"
)

var urlLog = regexp.MustCompile(`url=(http://\S+)/mcp`)

// serveHTTP runs toolsift --listen on a free port and returns its base URL. When the test
// ends it sends SIGTERM and checks that toolsift shuts down cleanly.
func serveHTTP(t *testing.T, yaml string, args ...string) string {
	t.Helper()
	url, _ := serveHTTPLogs(t, yaml, args...)
	return url
}

// serveHTTPLogs is serveHTTP that also returns a function reading toolsift's log so far.
func serveHTTPLogs(t *testing.T, yaml string, args ...string) (string, func() string) {
	t.Helper()
	return serveHTTPEnv(t, isolatedEnv(t), config(t, yaml), args...)
}

// serveHTTPEnv is serveHTTPLogs for a configuration file, in the environment env.
func serveHTTPEnv(t *testing.T, env []string, cfg string, args ...string) (string, func() string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--config", cfg, "--listen", "127.0.0.1:0", "--log-level", "debug"}, args...)...)
	stderr := &mcptest.Buffer{}
	cmd.Stderr = stderr
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := stderr.String
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("toolsift stderr:\n%s", logs())
		}
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("toolsift exited with %v after SIGTERM\n%s", err, logs())
			}
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Errorf("toolsift still running 15s after SIGTERM")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := urlLog.FindStringSubmatch(logs()); m != nil {
			return m[1], logs
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("toolsift did not report its address:\n%s", logs())
	return "", nil
}

type httpSession struct {
	*mcpclient.Client
	mu      sync.Mutex
	changed int
}

func connectHTTP(t *testing.T, url string, opts ...transport.StreamableHTTPCOption) *httpSession {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	s := &httpSession{Client: mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))}
	s.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/tools/list_changed" {
			s.mu.Lock()
			s.changed++
			s.mu.Unlock()
		}
	})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	res, err := s.Initialize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProtocolVersion != mcp.LATEST_LEGACY_PROTOCOL_VERSION {
		t.Errorf("negotiated %s, want %s", res.ProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *httpSession) names(t *testing.T) []string {
	t.Helper()
	res, err := s.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func (s *httpSession) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	return mcptest.Call(t, s.Client, name, args)
}

// TestHTTPSessionsAreIsolated serves two HTTP sessions from one toolsift: each unlocks its
// own tools and gets its own list_changed, over the POST stream alone (no GET stream).
func TestHTTPSessionsAreIsolated(t *testing.T) {
	url := serveHTTP(t, "mcpServers:"+githubFixture(t, ""))
	a, b := connectHTTP(t, url), connectHTTP(t, url)
	base := []string{"tool_search", "call_tool"}
	// Wait for the upstream, whose arrival is announced to every session, then count. A
	// client without a GET stream receives what was queued for it with its next request.
	a.call(t, "tool_search", map[string]any{"query": "select:no_such_tool"})
	time.Sleep(100 * time.Millisecond)
	a.names(t)
	b.names(t)
	time.Sleep(100 * time.Millisecond)
	counts := func() (int, int) {
		a.mu.Lock()
		defer a.mu.Unlock()
		b.mu.Lock()
		defer b.mu.Unlock()
		return a.changed, b.changed
	}
	baseA, baseB := counts()
	res := a.call(t, "tool_search", map[string]any{"query": "create issue", "max_results": 1})
	if res.IsError || !strings.Contains(mcptest.Text(res), "github__create_issue") {
		t.Fatalf("search: %s", mcptest.Text(res))
	}
	// The text is the result's JSON, and structuredContent the same.
	var text, structured any
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal([]byte(mcptest.Text(res)), &text); err != nil {
		t.Errorf("search text is not JSON: %v", err)
	}
	if err := json.Unmarshal(raw, &structured); err != nil || !reflect.DeepEqual(text, structured) {
		t.Errorf("structuredContent %s is not the text %s", raw, mcptest.Text(res))
	}
	if nA, _ := counts(); nA == baseA {
		t.Error("a got no list_changed over its POST stream")
	}
	if got := a.names(t); !slices.Equal(got, append(slices.Clone(base), "github__create_issue")) {
		t.Errorf("a lists %q", got)
	}
	if got := b.names(t); !slices.Equal(got, base) {
		t.Errorf("b sees a's unlock: %q", got)
	}
	res = b.call(t, "call_tool", map[string]any{"name": "github__get_issue", "arguments": map[string]any{"owner": "o", "repo": "r", "issue_number": 1}})
	if res.IsError || !strings.Contains(mcptest.Text(res), `"tool":"get_issue"`) {
		t.Fatalf("b call_tool: %s", mcptest.Text(res))
	}
	if got := a.names(t); slices.Contains(got, "github__get_issue") {
		t.Errorf("a sees b's unlock: %q", got)
	}
	if _, nB := counts(); nB-baseB != 1 {
		t.Errorf("b got %d list_changed, want 1 (for its own call only)", nB-baseB)
	}
}

// post sends a JSON-RPC body as an MCP client does and returns the response, its body read.
func post(t *testing.T, url string, headers map[string]string, body string) *http.Response {
	t.Helper()
	resp, _ := do(t, http.MethodPost, url, headers, body)
	return resp
}

// do sends a request with the headers an MCP client sends, and these (a "Host" header sets
// the request's host), and returns the response and its body.
func do(t *testing.T, method, url string, headers map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if h := headers["Host"]; h != "" {
		req.Host = h
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

// connectSSE opens and initializes a session over the legacy SSE transport. ctx bounds the
// session's stream; the test's cleanup closes the client.
func connectSSE(t *testing.T, ctx context.Context, url string, headers map[string]string) *mcpclient.Client {
	t.Helper()
	c, err := mcpclient.NewSSEMCPClient(url+"/sse", transport.WithHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	return c
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`

func TestHTTPSecurityAndSessions(t *testing.T) {
	const token = "0123456789abcdef-e2e"
	url, logs := serveHTTPLogs(t, "auth: {tokens: [\""+token+"\"]}\nallowedOrigins: [\"https://app.example.com\"]\nmcpServers:"+githubFixture(t, ""))
	defer func() {
		// Debug logging is on: still, no token may reach the log.
		if l := logs(); strings.Contains(l, token) || strings.Contains(l, "nope-nope") {
			t.Error("a bearer token appears in toolsift's log")
		}
	}()
	auth := map[string]string{"Authorization": "Bearer " + token}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{"Authorization": "Bearer " + token}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		want    int
	}{
		{"no token", nil, initBody, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, initBody, http.StatusUnauthorized},
		{"not bearer", map[string]string{"Authorization": "Basic " + token}, initBody, http.StatusUnauthorized},
		{"foreign origin", with(map[string]string{"Origin": "https://evil.example"}), initBody, http.StatusForbidden},
		{"unknown session", with(map[string]string{"Mcp-Session-Id": "no-such-session"}), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, http.StatusNotFound},
		{"huge body", auth, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5<<20) + `"}}`, http.StatusRequestEntityTooLarge},
		{"allowed origin", with(map[string]string{"Origin": "https://app.example.com"}), initBody, http.StatusOK},
		{"localhost origin", with(map[string]string{"Origin": "http://localhost:3000"}), initBody, http.StatusOK},
		{"token", auth, initBody, http.StatusOK},
		{"scheme in lower case", map[string]string{"Authorization": "bearer " + token}, initBody, http.StatusOK}, // RFC 9110: case-insensitive
		{"scheme in upper case", map[string]string{"Authorization": "BEARER " + token}, initBody, http.StatusOK},
		{"scheme only", map[string]string{"Authorization": "Bearer"}, initBody, http.StatusUnauthorized},
		{"token only", map[string]string{"Authorization": token}, initBody, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		resp := post(t, url+"/mcp", tt.headers, tt.body)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if tt.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: WWW-Authenticate = %q", tt.name, resp.Header.Get("WWW-Authenticate"))
		}
	}

	// A session ended with DELETE is gone: the client must re-initialise.
	resp := post(t, url+"/mcp", auth, initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("initialize returned no Mcp-Session-Id")
	}
	if r := post(t, url+"/mcp", with(map[string]string{"Mcp-Session-Id": id}), `{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.StatusCode != http.StatusOK {
		t.Errorf("ping in a live session: %d", r.StatusCode)
	}
	del, _ := http.NewRequest(http.MethodDelete, url+"/mcp", nil)
	del.Header.Set("Authorization", "Bearer "+token)
	del.Header.Set("Mcp-Session-Id", id)
	if r, err := http.DefaultClient.Do(del); err != nil || r.StatusCode/100 != 2 {
		t.Fatalf("DELETE: %v %v", r, err)
	}
	if r := post(t, url+"/mcp", with(map[string]string{"Mcp-Session-Id": id}), `{"jsonrpc":"2.0","id":3,"method":"ping"}`); r.StatusCode != http.StatusNotFound {
		t.Errorf("ping after DELETE: %d, want 404", r.StatusCode)
	}

	// Health needs no token; readiness names the servers.
	for _, path := range []string{"/healthz", "/readyz"} {
		r, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK && !(path == "/readyz" && r.StatusCode == http.StatusServiceUnavailable) {
			t.Errorf("%s: %d", path, r.StatusCode)
		}
		if path == "/readyz" && !strings.Contains(func() string { b, _ := json.Marshal(body); return string(b) }(), `"name":"github"`) {
			t.Errorf("/readyz = %v", body)
		}
	}

	// The MCP client works with the token.
	s := connectHTTP(t, url, transport.WithHTTPHeaders(auth))
	if got := s.names(t); len(got) != 2 {
		t.Errorf("authorised client lists %q", got)
	}
}

func TestHTTPRefusesAnOpenBindWithoutAuth(t *testing.T) {
	out, err := exec.Command(bin, "--config", config(t, "mcpServers:"+githubFixture(t, "")), "--listen", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to listen on 0.0.0.0:0 without auth.tokens") {
		t.Errorf("open bind without auth: err %v, output:\n%s", err, out)
	}
}

func TestHTTPLegacySSE(t *testing.T) {
	url := serveHTTP(t, "mcpServers:"+githubFixture(t, ""))
	c := connectSSE(t, context.Background(), url, nil)
	call := mcp.CallToolRequest{}
	call.Params.Name = "call_tool"
	call.Params.Arguments = map[string]any{"name": "github__echo", "arguments": map[string]any{"message": "over sse"}}
	res, err := c.CallTool(context.Background(), call)
	if err != nil || res.IsError || !strings.Contains(mcptest.Text(res), "over sse") {
		t.Fatalf("call over SSE: %v %+v", err, res)
	}
}

// TestHTTPListChangedIsNeverLost unlocks 1,000 tools one call at a time over the POST
// stream alone (the case where mcp-go can drop a notification sent as a handler ends) and
// counts the list_changed notifications that arrive.
func TestHTTPListChangedIsNeverLost(t *testing.T) {
	const n = 1000
	var tools []map[string]any
	for i := range n {
		tools = append(tools, map[string]any{
			"name": fmt.Sprintf("tool_%04d", i), "description": "A generated tool.",
			"inputSchema": map[string]any{"type": "object"},
		})
	}
	data, _ := json.Marshal(map[string]any{"tools": tools})
	file := filepath.Join(t.TempDir(), "many.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	url := serveHTTP(t, fmt.Sprintf("maxUnlocked: %d\nmcpServers:\n  many:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n", n, fixtureBin, file))
	s := connectHTTP(t, url)
	// Wait for the upstream: its arrival changes tool_search's server directory, which is
	// announced to every session, before the count starts.
	s.call(t, "tool_search", map[string]any{"query": "select:no_such_tool"})
	time.Sleep(200 * time.Millisecond)
	s.mu.Lock()
	base := s.changed
	s.mu.Unlock()
	for i := range n {
		res := s.call(t, "call_tool", map[string]any{"name": fmt.Sprintf("many__tool_%04d", i)})
		if res.IsError {
			t.Fatalf("call %d: %s", i, mcptest.Text(res))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := s.changed - base
		s.mu.Unlock()
		if got == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("received %d list_changed for %d unlocks", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := len(s.names(t)); got != n+2 {
		t.Errorf("session lists %d tools, want %d", got, n+2)
	}
}

// TestHTTPForwardsLogsSamplingAndElicitation runs the conformance fixture's tools that log,
// sample and elicit through toolsift over HTTP: the upstream's requests and messages reach
// the session whose call caused them.
func TestHTTPForwardsLogsSamplingAndElicitation(t *testing.T) {
	url := serveHTTP(t, fmt.Sprintf("mcpServers:\n  c:\n    command: %q\n    args: [--builtins=false, --conformance]\n    prefix: \"\"\n    alwaysLoad: true\n", fixtureBin))
	tr, err := transport.NewStreamableHTTP(url+"/mcp", transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs []string
	c := mcpclient.NewClient(tr,
		mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION),
		mcpclient.WithSamplingHandler(sampler{}),
		mcpclient.WithElicitationHandler(elicitor{}))
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			mu.Lock()
			logs = append(logs, fmt.Sprint(n.Params.AdditionalFields["data"]))
			mu.Unlock()
		}
	})
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatal(err)
	}
	call := func(name string, args map[string]any) string {
		r := mcp.CallToolRequest{}
		r.Params.Name, r.Params.Arguments = name, args
		res, err := c.CallTool(ctx, r)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		return mcptest.Text(res)
	}
	call("test_tool_with_logging", map[string]any{})
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(logs)
		mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(logs) != 3 || logs[0] != "Tool execution started" {
		t.Errorf("log messages = %q", logs)
	}
	mu.Unlock()
	if got := call("test_sampling", map[string]any{"prompt": "hi"}); got != "LLM response: sampled: hi" {
		t.Errorf("sampling through the proxy = %q", got)
	}
	if got := call("test_elicitation", map[string]any{"message": "who?"}); !strings.Contains(got, "action=accept") || !strings.Contains(got, "ada") {
		t.Errorf("elicitation through the proxy = %q", got)
	}
}

type sampler struct{}

func (sampler) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	prompt := ""
	if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
		prompt = tc.Text
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled: " + prompt)},
		Model:           "test", StopReason: "endTurn",
	}, nil
}

type elicitor struct{}

func (elicitor) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"username": "ada", "email": "ada@example.com"},
	}}, nil
}

// TestReadyz: /readyz is 503 until an upstream is connected, even when every server's tools
// are already known from the catalog cache, and 200 from then on.
func TestReadyz(t *testing.T) {
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf("mcpServers:\n  slow:\n    command: %q\n    args: [--catalog, %q, --start-delay, 3s]\n", fixtureBin, catalog(t, "github")))
	warmCache(t, env, bin, cfg, "create issue")
	url, _ := serveHTTPEnv(t, env, cfg)
	ready := func() (int, string) {
		r, err := http.Get(url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := ready(); code != http.StatusServiceUnavailable || !strings.Contains(body, `"state":"starting"`) || !strings.Contains(body, `"ready":false`) {
		t.Errorf("/readyz while the only server starts (warm cache) = %d %s, want 503", code, body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, body := ready()
		if code == http.StatusOK {
			if !strings.Contains(body, `"state":"connected"`) || !strings.Contains(body, `"ready":true`) {
				t.Errorf("/readyz = 200 %s, want the server connected", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d after 20s: %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestReadyzKeepsSecrets: a failed server's error can quote what it printed (here an API
// key it refused), so /readyz shows errors only to a request with a token, and then with
// the key masked; no path answers a request that names another host (a DNS-rebinding page).
func TestReadyzKeepsSecrets(t *testing.T) {
	const token = "readyz-token-0123456789"
	url := serveHTTP(t, fmt.Sprintf("auth: {tokens: [%q]}\nmcpServers:%s  broken:\n    command: %q\n    args: [--fail, \"invalid API key sk_live_0123456789SECRETabcd\"]\n", token, githubFixture(t, ""), fixtureBin))
	get := func(path string, headers map[string]string) (int, string) {
		r, b := do(t, http.MethodGet, url+path, headers, "")
		return r.StatusCode, string(b)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := get("/readyz", map[string]string{"Authorization": "Bearer " + token})
		if strings.Contains(body, "invalid API key [redacted]") && strings.Contains(body, `"state":"connected"`) {
			break
		}
		if strings.Contains(body, "SECRET") {
			t.Fatalf("/readyz shows the key: %s", body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the token never showed the failed server's error: %s", body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := get("/readyz", nil); code != http.StatusOK || strings.Contains(body, "invalid API key") || !strings.Contains(body, `"name":"broken","state":"failed"`) {
		t.Errorf("/readyz without a token = %d %s, want states and no errors", code, body)
	}
	for _, path := range []string{"/readyz", "/healthz", "/mcp"} {
		if code, body := get(path, map[string]string{"Host": "attacker.example", "Authorization": "Bearer " + token}); code != http.StatusForbidden {
			t.Errorf("%s with Host attacker.example = %d %s, want 403", path, code, body)
		}
	}
	if code, _ := get("/healthz", map[string]string{"Host": "localhost"}); code != http.StatusOK {
		t.Errorf("/healthz with Host localhost = %d, want 200", code)
	}
}

// TestSSESessionCallsAreBounded: the legacy SSE transport answers each POST /message at once
// and runs the request behind it, so its bound is maxCalls: past it, calls are refused at
// once rather than piling up.
func TestSSESessionCallsAreBounded(t *testing.T) {
	url := serveHTTP(t, "maxCalls: 4\ncallTimeout: 5m\nmcpServers:"+githubFixture(t, ""))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // ends the hung calls
	c := connectSSE(t, ctx, url, nil)
	refused := make(chan string, 20)
	for range 20 {
		go func() {
			call := mcp.CallToolRequest{}
			call.Params.Name = "call_tool"
			call.Params.Arguments = map[string]any{"name": "github__hang", "arguments": map[string]any{}}
			res, err := c.CallTool(ctx, call)
			if err != nil {
				refused <- err.Error()
			} else {
				refused <- mcptest.Text(res)
			}
		}()
	}
	for i := range 16 {
		select {
		case text := <-refused:
			// Refused by the gate (429) once the session's calls are at maxCalls, or by the
			// proxy for a call that passed the gate while others were on their way in.
			if !strings.Contains(text, "429") && !strings.Contains(text, "too many calls in flight in this session: 4") {
				t.Fatalf("call %d answered %q, want it refused past maxCalls", i, text)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of 16 calls past maxCalls refused within 20s", i)
		}
	}
	select {
	case text := <-refused:
		t.Errorf("a call within maxCalls answered %q; it should still hang", text)
	case <-time.After(200 * time.Millisecond):
	}
	id := c.GetTransport().(*transport.SSE).GetEndpoint().Query().Get("sessionId")
	r := post(t, url+"/message?sessionId="+id, nil, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"github__hang","arguments":{}}}`)
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
		t.Errorf("POST /message with maxCalls in flight = %d, want 429 with Retry-After", r.StatusCode)
	}
}

// TestSessionBelongsToItsToken: with two tokens configured, the holder of one cannot use,
// list or end a session the other opened, over streamable HTTP or legacy SSE.
func TestSessionBelongsToItsToken(t *testing.T) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	url := serveHTTP(t, fmt.Sprintf("auth: {tokens: [%q, %q]}\nmcpServers:%s", alice, bob, githubFixture(t, "")))
	as := func(token string) transport.StreamableHTTPCOption {
		return transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})
	}
	a := connectHTTP(t, url, as(alice))
	a.call(t, "tool_search", map[string]any{"query": "select:github__create_issue"})
	id := a.GetSessionId()
	if id == "" {
		t.Fatal("no session id")
	}
	for _, m := range []struct{ method, body string }{
		{http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`},
		{http.MethodDelete, ``},
	} {
		r, b := do(t, m.method, url+"/mcp", map[string]string{"Authorization": "Bearer " + bob, "Mcp-Session-Id": id}, m.body)
		if r.StatusCode != http.StatusNotFound || strings.Contains(string(b), "github__create_issue") {
			t.Errorf("%s with another token's session = %d %s, want 404", m.method, r.StatusCode, b)
		}
	}
	if got := a.names(t); !slices.Contains(got, "github__create_issue") {
		t.Errorf("the owner's session was disturbed: %q", got)
	}

	// Legacy SSE: the session's ID is in the endpoint event.
	c := connectSSE(t, context.Background(), url, map[string]string{"Authorization": "Bearer " + alice})
	sseID := c.GetTransport().(*transport.SSE).GetEndpoint().Query().Get("sessionId")
	if sseID == "" {
		t.Fatal("no SSE session id in the endpoint")
	}
	r := post(t, url+"/message?sessionId="+sseID, map[string]string{"Authorization": "Bearer " + bob}, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	if r.StatusCode != http.StatusNotFound {
		t.Errorf("POST /message to another token's SSE session = %d, want 404", r.StatusCode)
	}
	if r := post(t, url+"/message?sessionId="+sseID, map[string]string{"Authorization": "Bearer " + alice}, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.StatusCode/100 != 2 {
		t.Errorf("POST /message by the owner = %d", r.StatusCode)
	}
}

// TestHTTPServerThatStopsReading: over HTTP too, a server that stops reading its stdin costs
// one call callTimeout, other servers answer meanwhile, and toolsift still shuts down
// cleanly on SIGTERM (serveHTTP's cleanup checks it exits 0 within 15s).
func TestHTTPServerThatStopsReading(t *testing.T) {
	url := serveHTTP(t, fmt.Sprintf("callTimeout: 3s\nmcpServers:\n  a:\n    command: %q\n  b:\n    command: %q\n", fixtureBin, fixtureBin))
	s := connectHTTP(t, url)
	s.call(t, "tool_search", map[string]any{"query": "select:a__freeze,a__echo,b__echo"})
	s.call(t, "a__freeze", map[string]any{}) // answers at callTimeout; a reads nothing from then on
	start := time.Now()
	res := s.call(t, "a__echo", map[string]any{"message": strings.Repeat("x", 256<<10)})
	if !res.IsError || !strings.Contains(mcptest.Text(res), `upstream "a"`) {
		t.Errorf("a call to a server that stopped reading = %.200s, want an error naming it", mcptest.Text(res))
	}
	if d := time.Since(start); d > time.Minute { // a hang, not a slow machine
		t.Errorf("the call took %v with callTimeout 3s", d)
	}
	if res := s.call(t, "b__echo", map[string]any{"message": "fine"}); res.IsError {
		t.Errorf("b = %.200s", mcptest.Text(res))
	}
}
