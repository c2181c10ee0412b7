package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// modernClient is mcp-go's client on protocol 2026-07-28: no initialize, no session, its
// version, info and capabilities on every request. Its httpSession counts the
// notifications/tools/list_changed that reach it on subscriptions/listen.
type modernClient struct {
	*httpSession
	asked atomic.Int32 // questions its user was asked
	acked atomic.Int32 // subscriptions/listen streams the server acknowledged
}

// Elicit answers every form with a name and a colour.
func (c *modernClient) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.asked.Add(1)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept,
		Content: map[string]any{"name": "Ada", "color": "teal", "ok": true}}}, nil
}

func connectModern(t *testing.T, base string, elicits bool, opts ...transport.StreamableHTTPCOption) *modernClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	c := &modernClient{httpSession: &httpSession{}}
	var copts []mcpclient.ClientOption
	if elicits {
		copts = append(copts, mcpclient.WithElicitationHandler(c))
	}
	c.Client = mcpclient.NewClient(tr, copts...)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case string(mcp.MethodNotificationToolsListChanged):
			c.mu.Lock()
			c.changed++
			c.mu.Unlock()
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			c.acked.Add(1)
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "modern-agent", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("negotiated %s, want %s: server/discover was not answered", v, mcp.ProtocolVersion20260728)
	}
	if id := c.GetSessionId(); id != "" {
		t.Errorf("a 2026-07-28 client was given session %q", id)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// callTool calls name through call_tool.
func (c *modernClient) callTool(t *testing.T, name string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	return c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "call_tool",
		Arguments: map[string]any{"name": name, "arguments": args}}})
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestModernClient (issue 35): a client that speaks only 2026-07-28 is served in full:
// server/discover, a stable tools/list (always-load tools, tool_search, call_tool) that a
// search does not change, everything reached through call_tool, an upstream's mid-call
// questions as input_required results, changes on subscriptions/listen, and no session.
func TestModernClient(t *testing.T) {
	cfg := config(t, fmt.Sprintf(`mcpServers:
  fx:
    command: %q
    args: ["--conformance"]
    alwaysLoad: [echo, shiny]
  slack:
    command: %q
    args: ["--catalog", %q]
`, fixtureBin, fixtureBin, catalog(t, "slack")))
	base, _, logs := replica(t, cfg)
	c := connectModern(t, base, true)

	want := []string{"fx__echo", "tool_search", "call_tool"}
	var first []string
	eventually(t, 20*time.Second, "the always-load tool listed", func() bool {
		first = c.names(t)
		return slices.Equal(first, want)
	})
	res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "tool_search",
		Arguments: map[string]any{"query": "post a message to a slack channel"}}})
	if err != nil {
		t.Fatal(err)
	}
	found := resultText(res)
	if !strings.Contains(found, "slack__slack_post_message") || !strings.Contains(found, `"inputSchema"`) {
		t.Fatalf("tool_search did not return the match with its schema:\n%s", found)
	}
	if got := c.names(t); !slices.Equal(got, first) {
		t.Errorf("tools/list changed after a search: %v, was %v; 2026-07-28 lists must not vary per connection", got, first)
	}
	res, err = c.callTool(t, "slack__slack_post_message", map[string]any{"channel": "C1", "text": "hi"})
	if err != nil || res.IsError {
		t.Fatalf("call_tool of a found tool: %v %v", err, res)
	}
	if !strings.Contains(resultText(res), `"channel":"C1"`) {
		t.Errorf("the result was not passed through: %s", resultText(res))
	}

	// An upstream on 2025-11-25 asks twice mid-call: the client answers two
	// input_required rounds, and the call completes with both answers.
	res, err = c.callTool(t, "fx__test_input_required_result_multi_round", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(res); got != "favourite colour: teal" || c.asked.Load() != 2 {
		t.Errorf("multi-round call: %q after %d questions, want the colour after 2", got, c.asked.Load())
	}

	// A client that cannot sample is told so, with the code and the capability.
	plain := connectModern(t, base, false)
	_, err = plain.callTool(t, "fx__test_missing_capability", map[string]any{})
	if !errors.Is(err, mcp.MissingRequiredClientCapabilityError{}) {
		t.Errorf("a call that needs sampling, from a client without it: %v, want -32021", err)
	}
	// A question the client cannot show its user is declined for it, and the call goes on.
	res, err = plain.callTool(t, "fx__test_input_required_result_elicitation", map[string]any{})
	if err != nil || resultTextOf(res) != "No name given: decline" {
		t.Errorf("an elicitation a client cannot show: %v %q, want it declined and the call to go on", err, resultTextOf(res))
	}

	// A change of the stable list reaches a listening client; the list shows it.
	ctx, cancel := context.WithCancel(context.Background())
	listened := make(chan error, 1)
	go func() { listened <- c.Listen(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}) }()
	eventually(t, 10*time.Second, "the listen stream acknowledged", func() bool { return c.acked.Load() > 0 })
	if res, err := c.callTool(t, "fx__retool", map[string]any{"add": []string{"shiny"}}); err != nil || res.IsError {
		t.Fatalf("retool: %v %v", err, res)
	}
	eventually(t, 10*time.Second, "list_changed on the listen stream", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.changed > 0
	})
	cancel()
	<-listened
	if got := c.names(t); !slices.Contains(got, "fx__shiny") {
		t.Errorf("the new always-load tool is not listed: %v", got)
	}
	if strings.Contains(logs(), "client connected") {
		t.Error("a 2026-07-28 client was taken for a session")
	}
}

// TestModernRequestsOnAnyReplica (issue 35): 2026-07-28 requests need no affinity. Each
// request of one client goes to the next of two replicas in turn: every list is the same,
// every call works, and a call whose upstream asks for input completes even when its
// answers reach the other replica. A requestState one caller was given is refused to
// another.
func TestModernRequestsOnAnyReplica(t *testing.T) {
	redisURL, _, _ := redisServer(t)
	cfg := config(t, fmt.Sprintf(`state: {redis: {url: %q}}
mcpServers:
  fx:
    command: %q
    args: ["--conformance"]
    alwaysLoad: [echo]
`, redisURL, fixtureBin))
	a, aCmd, _ := replica(t, cfg)
	b, _, _ := replica(t, cfg)
	var turn atomic.Int32
	rr := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		to := a
		if turn.Add(1)%2 == 0 {
			to = b
		}
		u, _ := url.Parse(to)
		r = r.Clone(r.Context())
		r.URL.Host, r.Host = u.Host, u.Host
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := connectModern(t, a, true, transport.WithHTTPBasicClient(rr))
	var first []string
	eventually(t, 20*time.Second, "the always-load tool listed by both replicas", func() bool {
		first = c.names(t)
		return slices.Contains(first, "fx__echo") && slices.Equal(c.names(t), first)
	})
	for i := range 6 {
		if got := c.names(t); !slices.Equal(got, first) {
			t.Fatalf("list %d differs by replica: %v, was %v", i, got, first)
		}
		res, err := c.callTool(t, "fx__echo", map[string]any{"n": i})
		if err != nil || !strings.Contains(resultText(res), fmt.Sprintf(`"n":%d`, i)) {
			t.Fatalf("call %d: %v %v", i, err, res)
		}
	}
	for i := range 4 {
		before := c.asked.Load()
		res, err := c.callTool(t, "fx__test_input_required_result_multi_round", map[string]any{})
		if err != nil || resultText(res) != "favourite colour: teal" || c.asked.Load()-before != 2 {
			t.Fatalf("multi-round call %d across replicas: %v %q after %d questions", i, err, resultTextOf(res), c.asked.Load()-before)
		}
	}

	// Its call held by a replica that is killed, the client's answers at the other get a
	// clean "make the request again", soon, and never another call's outcome.
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__test_input_required_result_elicitation","arguments":{},%s"_meta":` + modernMeta + `}}`
	_, asked := modernRPC(t, a, "", fmt.Sprintf(call, ""))
	var asks struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if json.Unmarshal(asked, &asks); asks.ResultType != "input_required" || asks.RequestState == "" {
		t.Fatalf("the call did not ask for input: %s", asked)
	}
	answers := fmt.Sprintf(`"requestState":%q,"inputResponses":{"any":{"action":"accept","content":{"name":"Ada"}}},`, asks.RequestState)
	aCmd.Process.Kill()
	aCmd.Wait()
	start := time.Now()
	status, retry := modernRPC(t, b, "", fmt.Sprintf(call, answers))
	took := time.Since(start)
	if status != http.StatusBadRequest || !strings.Contains(string(retry), `"code":-32602`) || !strings.Contains(string(retry), "make the request again") || took > 10*time.Second {
		t.Errorf("answers to a call whose replica died: HTTP %d %s after %v", status, retry, took)
	}
	t.Logf("answers to a call whose replica died were told to start again after %v", took)
}

const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// modernRequest is a 2026-07-28 request carrying body, with the headers it requires (from
// its method and name) and token if any.
func modernRequest(ctx context.Context, base, token, body string) *http.Request {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal([]byte(body), &m)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", m.Method)
	if m.Params.Name != "" {
		req.Header.Set("Mcp-Name", m.Params.Name)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// modernRPC posts one 2026-07-28 request, headers and all, with token if any, and returns the status and the
// answer's result or error.
func modernRPC(t *testing.T, base, token, body string) (int, json.RawMessage) {
	t.Helper()
	req := modernRequest(context.Background(), base, token, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if data, ok := bytes.CutPrefix(bytes.TrimSpace(raw), []byte("event: message\ndata: ")); ok {
		raw = data
	}
	var a struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return resp.StatusCode, raw // not JSON-RPC: a refusal in plain text
	}
	if a.Error != nil {
		return resp.StatusCode, a.Error
	}
	return resp.StatusCode, a.Result
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func resultTextOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	return resultText(res)
}

// TestModernRequestsActAsTheirCaller (issue 35, an attack): 2026-07-28 requests have no
// session, so who is calling comes from each request's own credentials. A person kept from a
// server by the access rules gets nothing of it with such requests (not listed, not found,
// not callable), where a request without a session once fell back to the local user, who
// may use everything. A call waiting for input is continued only by the caller who made it.
func TestModernRequestsActAsTheirCaller(t *testing.T) {
	d := newIDP(t)
	d.groups["ann"] = []string{"eng"}
	tm := serveTeam(t, d, "", accessServers(t)+fmt.Sprintf("  fx:\n    command: %q\n    args: [\"--conformance\"]\n", fixtureBin))
	as := func(who string) *modernClient {
		return connectModern(t, tm.url, true, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + d.token(who, tm.url+"/mcp")}))
	}
	ann, bob := as("ann"), as("bob")
	eventually(t, 20*time.Second, "ann's always-load github tool", func() bool { return slices.Contains(ann.names(t), "github__get_issue") })
	if got := bob.names(t); slices.Contains(got, "github__get_issue") {
		t.Errorf("bob (not in eng) lists github__get_issue: %v", got)
	}
	search := func(c *modernClient, q string) string {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": q}}})
		if err != nil {
			t.Fatal(err)
		}
		return resultText(res)
	}
	if got := search(bob, "create a github issue"); strings.Contains(got, "github__") {
		t.Errorf("bob's search finds github tools:\n%s", got)
	}
	if got := search(ann, "create a github issue"); !strings.Contains(got, "github__create_issue") {
		t.Errorf("ann's search does not find github__create_issue:\n%s", got)
	}
	res, err := bob.callTool(t, "github__create_issue", map[string]any{"owner": "o", "repo": "r", "title": "t"})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "unknown tool") {
		t.Errorf("bob calls github__create_issue: %v %s", err, resultTextOf(res))
	}
	if res, err := ann.callTool(t, "github__create_issue", map[string]any{"owner": "o", "repo": "r", "title": "t"}); err != nil || res.IsError {
		t.Errorf("ann calls github__create_issue: %v %s", err, resultTextOf(res))
	}

	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fx__test_input_required_result_elicitation","arguments":{},%s"_meta":` + modernMeta + `}}`
	annTok, bobTok := d.token("ann", tm.url+"/mcp"), d.token("bob", tm.url+"/mcp")
	var asks struct {
		RequestState string `json:"requestState"`
	}
	eventually(t, 20*time.Second, "fx's call asking for input", func() bool {
		_, asked := modernRPC(t, tm.url, annTok, fmt.Sprintf(call, ""))
		json.Unmarshal(asked, &asks)
		return asks.RequestState != ""
	})
	answers := fmt.Sprintf(`"requestState":%q,"inputResponses":{"any":{"action":"accept","content":{"name":"Mallory"}}},`, asks.RequestState)
	if status, got := modernRPC(t, tm.url, bobTok, fmt.Sprintf(call, answers)); status != http.StatusBadRequest || !strings.Contains(string(got), `"code":-32602`) {
		t.Errorf("bob continues ann's call with her requestState: HTTP %d %s", status, got)
	}
}

// TestModernCallsAreBounded (issue 35, an attack): requests without a session cannot be
// counted per session, so a caller could hold any number of calls open. A caller has
// maxCalls calls running at most: past it a call is refused at once, and once they end,
// calls go through again. (The gate also bounds a caller's requests in flight, at
// maxCalls + 8, with 429.)
func TestModernCallsAreBounded(t *testing.T) {
	cfg := config(t, fmt.Sprintf("maxCalls: 2\nmcpServers:\n  fx:\n    command: %q\n", fixtureBin))
	base, _, _ := replica(t, cfg)
	call := func(ctx context.Context, id int, tool string) (int, string) {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":%q,"arguments":{"n":%d}},"_meta":%s}}`, id, tool, id, modernMeta)
		resp, err := http.DefaultClient.Do(modernRequest(ctx, base, "", body))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	eventually(t, 20*time.Second, "fx's tools", func() bool {
		_, got := call(context.Background(), 1, "fx__echo")
		return strings.Contains(got, `\"n\":1`)
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var refused atomic.Int32
	for i := range 14 {
		wg.Go(func() {
			if _, got := call(ctx, i+2, "fx__hang"); strings.Contains(got, "too many calls in flight") {
				refused.Add(1)
			}
		})
	}
	eventually(t, 10*time.Second, "the calls past maxCalls refused", func() bool { return refused.Load() >= 12 })
	cancel()
	wg.Wait()
	if n := refused.Load(); n != 12 {
		t.Errorf("%d of 14 hanging calls refused, want 12 (maxCalls 2 running)", n)
	}
	eventually(t, 10*time.Second, "a call once the others ended", func() bool {
		status, got := call(context.Background(), 99, "fx__echo")
		return status == http.StatusOK && strings.Contains(got, `\"n\":99`)
	})
}
