package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/internal/jsonrpc"
)

func TestRequestAndResponseIDs(t *testing.T) {
	requests := []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `1`},
		{`{"method":"tools/call","params":{},"id":"a","jsonrpc":"2.0"}`, `"a"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``}, // a notification
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, ``},                   // the client's answer to us
		{`not json`, ``},
		{``, ``},
	}
	for _, tt := range requests {
		if got, _, _ := request([]byte(tt.line)); string(got) != tt.want {
			t.Errorf("request(%s) id = %s, want %s", tt.line, got, tt.want)
		}
	}
	long := `"` + strings.Repeat("x", 300) + `"`
	responses := []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"method\":"}]}}`, `1`},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`, `"x"`},
		{`{"jsonrpc":"2.0","id":` + long + `,"result":{}}`, long},                                // a long id is still found
		{`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"result":1}}`, ``}, // our request
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, ``},
		{`{"id":1,"result":{}}`, ``}, // not as mcp-go writes
	}
	for _, tt := range responses {
		if got, _ := responseID([]byte(tt.line)); string(got) != tt.want {
			t.Errorf("responseID(%s) = %s, want %s", tt.line, got, tt.want)
		}
	}
}

// TestOwedAnswers: the answers a refusal or a parse error gets, to no request on the list,
// leave the requests still owed alone.
func TestOwedAnswers(t *testing.T) {
	var refused []string
	d := &drainReader{maxLine: 100, refuse: func(id []byte) { refused = append(refused, string(id)) }}
	// The second is over maxLine, with its id last (as the TypeScript SDK writes it) and
	// another "id" in its arguments.
	d.take([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n" +
		`{"method":"tools/call","params":{"arguments":{"id":99},"x":"` + strings.Repeat("y", 200) + `"},"jsonrpc":"2.0","id":2}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"))
	if len(refused) != 1 || refused[0] != "2" {
		t.Errorf("refused ids %q, want [2]", refused)
	}
	if n := d.owed.len(); n != 2 {
		t.Fatalf("owed %d answers, want 2 (the refused request is not passed on)", n)
	}
	d.owed.answered([]byte(`2`))    // the refusal's answer
	d.owed.answered([]byte(`null`)) // a parse error's
	d.owed.answered([]byte(`1`))
	if n := d.owed.len(); n != 1 {
		t.Errorf("owed %d answers after one was answered, want 1", n)
	}
}

// TestStdioConnRequests: toolsift's own requests to a stdio client (elicitation, roots)
// get the client's answers; an error answer is an error naming it; a second answer, or one
// to no request, changes nothing and holds nothing up; and a request still waiting when
// the client goes fails at once.
func TestStdioConnRequests(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := newStdioConn(newGoldenProxy(t), &responseWatcher{w: outW, lists: &pendingSplices{relist: true}})
	served := make(chan error, 1)
	go func() { served <- conn.serve(context.Background(), &drainReader{r: inR, maxLine: 1 << 20}) }()
	out := bufio.NewReader(outR)
	// next reads the next request toolsift wrote and returns its id and method.
	next := func() (string, string) {
		t.Helper()
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID     json.RawMessage
			Method string
		}
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return string(m.ID), m.Method
	}
	send := func(format string, args ...any) {
		t.Helper()
		if _, err := fmt.Fprintf(inW, format+"\n", args...); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()

	type result struct {
		v   any
		err error
	}
	got := make(chan result, 1)
	go func() {
		r, err := conn.ListRoots(ctx, mcp.ListRootsRequest{})
		got <- result{r, err}
	}()
	id, method := next()
	if method != "roots/list" {
		t.Fatalf("request %s, want roots/list", method)
	}
	send(`{"jsonrpc":"2.0","id":12345,"result":{}}`) // to no request of toolsift's
	send(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///work","name":"work"}]}}`, id)
	send(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[]}}`, id) // a second answer
	if r := <-got; r.err != nil || len(r.v.(*mcp.ListRootsResult).Roots) != 1 || r.v.(*mcp.ListRootsResult).Roots[0].URI != "file:///work" {
		t.Fatalf("ListRoots = %+v, %v", r.v, r.err)
	}

	go func() {
		r, err := conn.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "sure?"}})
		got <- result{r, err}
	}()
	id, method = next()
	if method != "elicitation/create" {
		t.Fatalf("request %s, want elicitation/create", method)
	}
	send(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32600,"message":"declined by policy"}}`, id)
	if r := <-got; r.err == nil || !strings.Contains(r.err.Error(), "-32600: declined by policy") {
		t.Fatalf("RequestElicitation answered with an error: %v", r.err)
	}

	// A malformed line is answered, and the connection goes on.
	send(`{"jsonrpc":`)
	if line, _ := out.ReadBytes('\n'); !bytes.Equal(line, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`+"\n")) {
		t.Fatalf("a malformed line answered %s", line)
	}

	go func() {
		r, err := conn.ListRoots(ctx, mcp.ListRootsRequest{})
		got <- result{r, err}
	}()
	next()
	inW.Close() // the client goes before it answers
	go io.Copy(io.Discard, out)
	select {
	case r := <-got:
		if r.err == nil || !strings.Contains(r.err.Error(), "client is gone") {
			t.Fatalf("ListRoots after the client went = %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListRoots still waits after the client went")
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestListChangedBeforeSearchResult: over stdio, the list_changed of a search whose client
// reads the result at once (Codex) goes out before the result, not after it from another
// goroutine; and one that no message follows still goes out, within heldFor.
func TestListChangedBeforeSearchResult(t *testing.T) {
	c := newTranscript(t, newGoldenProxy(t))
	c.initializeAs("codex-mcp-client")
	id := c.send("tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": "create issue"}})
	c.expect("notifications/tools/list_changed")
	c.expect(id)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := newStdioConn(newGoldenProxy(t), &responseWatcher{w: outW, lists: &pendingSplices{}})
	served := make(chan error, 1)
	go func() { served <- conn.serve(context.Background(), &drainReader{r: inR, maxLine: 1 << 20}) }()
	defer func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-served
	}()
	conn.Initialize()
	start := time.Now()
	conn.notify(withResultSoon(context.Background()), "notifications/tools/list_changed")
	conn.notify(withResultSoon(context.Background()), "notifications/tools/list_changed") // once is enough
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil || line != `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`+"\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a held notification went out after %v", d)
	}
}

// TestQuickRequests: the requests the reader serves itself are those answered from memory; a
// tool_search that will wait for the client's re-list, or ask its model, is not one.
func TestQuickRequests(t *testing.T) {
	p := newGoldenProxyWith(t, Options{Version: "golden", Sampling: true})
	conn := newStdioConn(p, &responseWatcher{w: io.Discard, lists: &pendingSplices{}})
	ctx := context.Background()
	if err := p.mcp.RegisterSession(ctx, conn); err != nil {
		t.Fatal(err)
	}
	ctx = p.mcp.WithContext(ctx, conn)
	if pending := p.ups.WaitStarted(ctx); len(pending) > 0 {
		t.Fatalf("servers not started: %v", pending)
	}
	sess := p.sessionFrom(ctx)
	search := `{"name":"tool_search","arguments":{"query":"create issue"}}`
	for _, tc := range []struct {
		name, method, params string
		holds, samples       bool
		want                 bool
	}{
		{"ping", "ping", "", false, false, true},
		{"tools/list", "tools/list", `{}`, true, false, true},
		{"search, client reads the result first", "tools/call", search, false, false, true},
		{"search, client re-lists first", "tools/call", search, true, false, false},
		{"search, client samples", "tools/call", search, false, true, false},
		{"call_tool", "tools/call", `{"name":"call_tool","arguments":{"name":"gh__create_issue"}}`, false, false, false},
		{"an upstream tool", "tools/call", `{"name":"gh__create_issue","arguments":{}}`, false, false, false},
		{"params an array", "tools/call", `["tool_search"]`, false, false, false},
		{"name not a string", "tools/call", `{"name":["tool_search"]}`, false, false, false},
		{"no params", "tools/call", "", false, false, false},
		{"initialize", "initialize", `{}`, false, false, false},
		{"resources/read", "resources/read", `{"uri":"x"}`, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess.mu.Lock()
			sess.holds, sess.samples, sess.watched = tc.holds, tc.samples, true
			sess.mu.Unlock()
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q}`, tc.method)
			if tc.params != "" {
				line = fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, tc.method, tc.params)
			}
			if got := p.quick(ctx, tc.method, []byte(line)); got != tc.want {
				t.Errorf("quick(%s %s) = %v, want %v", tc.method, tc.params, got, tc.want)
			}
		})
	}
}

// TestQuickRequestHandsOverReading: a quick request the reader serves itself does not keep
// the lines after it unread when it blocks (here its answer, which the client does not read),
// and both are answered once the client reads; a quick request makes no worker, another
// request does.
func TestQuickRequestHandsOverReading(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := newStdioConn(newGoldenProxy(t), &responseWatcher{w: outW, lists: &pendingSplices{}})
	served := make(chan error, 1)
	go func() { served <- conn.serve(context.Background(), &drainReader{r: inR, maxLine: 1 << 20}) }()
	send := func(line string) chan error {
		sent := make(chan error, 1)
		go func() {
			_, err := io.WriteString(inW, line+"\n") // returns once the line is read
			sent <- err
		}()
		return sent
	}
	out := bufio.NewReader(outR)
	answer := func() string {
		t.Helper()
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		return string(jsonrpc.ID(line))
	}

	if err := <-send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`):
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the line after a quick request whose answer blocks is still unread")
	}
	if got := []string{answer(), answer()}; !slices.Contains(got, "1") || !slices.Contains(got, "2") {
		t.Fatalf("answers to %v, want 1 and 2", got)
	}

	waitIdle := func(want int32) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); conn.idle.Load() != want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d idle workers, want %d", conn.idle.Load(), want)
			}
		}
	}
	<-send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if id := answer(); id != "3" {
		t.Fatalf("answer to %s, want 3", id)
	}
	waitIdle(0)
	<-send(`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`)
	if id := answer(); id != "4" {
		t.Fatalf("answer to %s, want 4", id)
	}
	waitIdle(1)

	inW.Close()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestHandoverTimerRearms: the handover timer, armed by a quick request that has ended,
// finds another being served that began less than inlineFor ago; it arms itself again for
// the rest, rather than leave that request unwatched, and hands reading over once the
// request has run past it.
func TestHandoverTimerRearms(t *testing.T) {
	inR, inW := io.Pipe()
	conn := newStdioConn(newGoldenProxy(t), &responseWatcher{w: io.Discard, lists: &pendingSplices{}})
	conn.readCtx, conn.input, conn.end = context.Background(), &drainReader{r: inR, maxLine: 1 << 20}, make(chan error, 1)
	conn.handover = time.AfterFunc(time.Hour, conn.takeOver)
	conn.handover.Stop()
	defer conn.handover.Stop()
	// As serveInline leaves them for a request begun just now, the timer armed by an
	// earlier one; then that earlier one's firing.
	conn.handoverArmed.Store(true)
	conn.inlineSince.Store(conn.now())
	conn.inline.Store(inlineServing)
	conn.takeOver()
	if !conn.handoverArmed.Load() || conn.inline.Load() != inlineServing {
		t.Fatalf("after the earlier request's firing: armed %v, state %d; want armed, still serving", conn.handoverArmed.Load(), conn.inline.Load())
	}
	sent := make(chan error, 1)
	go func() {
		_, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n") // returns once read
		sent <- err
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading never moved from a request served past inlineFor")
	}
	if st := conn.inline.Load(); st != inlineHandedOver {
		t.Errorf("state %d, want handed over", st)
	}
	inW.Close()
	if err := <-conn.end; err != nil {
		t.Errorf("the new reader's end: %v", err)
	}
}
