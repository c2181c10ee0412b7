package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestStdioRefusesWhatItCannotServe: a line over MaxRequestBytes is answered with an error
// under its id (here written last, as the TypeScript SDK does, with another "id" in its
// arguments) and never held whole; a malformed line gets a parse error; blank lines are no
// messages; the next request is served as ever.
func TestStdioRefusesWhatItCannotServe(t *testing.T) {
	p := newGoldenProxy(t)
	p.opts.MaxRequestBytes = 200
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- p.ServeStdio(context.Background(), inR, outW) }()
	out := bufio.NewReader(outR)
	go func() {
		fmt.Fprintf(inW, "%s\n\n  \n%s\n%s\n",
			`{"method":"tools/call","params":{"arguments":{"id":99},"x":"`+strings.Repeat("y", 300)+`"},"jsonrpc":"2.0","id":2}`,
			`{"jsonrpc":`, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	}()
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"request over 200 bytes, toolsift's limit"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	} {
		line, err := out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != want {
			t.Errorf("read %q, %v; want %s", line, err, want)
		}
	}
	inW.Close()
	go io.Copy(io.Discard, out)
	if err := <-served; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
}

// TestStdioConnRequests: toolsift's own requests to a stdio client (elicitation, roots)
// get the client's answers; an error answer is an error naming it; a second answer, or one
// to no request, changes nothing and holds nothing up; and a request still waiting when
// the client goes fails at once.
func TestStdioConnRequests(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	conn := newStdio(newGoldenProxy(t), outW)
	served := make(chan error, 1)
	go func() { served <- conn.serve(context.Background(), inR) }()
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
// goroutine.
func TestListChangedBeforeSearchResult(t *testing.T) {
	c := newTranscript(t, newGoldenProxy(t))
	c.initializeAs("codex-mcp-client")
	id := c.send("tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": "create issue"}})
	c.expect("notifications/tools/list_changed")
	c.expect(id)
}

// TestStdioIDs: every request is answered under the id it was sent with, exactly as
// written, whatever its size or kind; a message whose id or shape is not JSON-RPC's gets
// Invalid Request, and nothing else is said to it.
func TestStdioIDs(t *testing.T) {
	p := newGoldenProxy(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- p.ServeStdio(context.Background(), inR, outW) }()
	out := bufio.NewReader(outR)
	tests := []struct{ send, want string }{
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, `{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}`},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, `{"jsonrpc":"2.0","id":9007199254740993,"result":{}}`},
		{`{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}`, `{"jsonrpc":"2.0","id":-9223372036854775809,"result":{}}`},
		{`{"jsonrpc":"2.0","id":1.50,"method":"ping"}`, `{"jsonrpc":"2.0","id":1.50,"result":{}}`},
		{`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, `{"jsonrpc":"2.0","id":1e3,"result":{}}`},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, `{"jsonrpc":"2.0","id":"a\"b","result":{}}`},
		{`{"jsonrpc":"2.0","id":"","method":"ping"}`, `{"jsonrpc":"2.0","id":"","result":{}}`},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}`},
		{`{"jsonrpc":"2.0","id":[7],"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}`},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: id must be a string or an integer"}}`},
		{`{"jsonrpc":"2.0","id":4,"method":["ping"]}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: method must be a string"}}`},
		{`[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a JSON-RPC message is a JSON object"}}`},
		{`"ping"`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: a JSON-RPC message is a JSON object"}}`},
	}
	for _, tt := range tests {
		fmt.Fprintln(inW, tt.send)
		line, err := out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != tt.want {
			t.Errorf("sent %s: read %q, %v; want %s", tt.send, line, err, tt.want)
		}
	}
	// A big id on a request mcp-go answers from toolsift's hooks, and its list.
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/list"}`)
	if line, err := out.ReadString('\n'); err != nil || !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":18446744073709551617,"result":{"tools":[`) {
		t.Errorf("tools/list under a big id: read %.120q, %v", line, err)
	}
	inW.Close()
	go io.Copy(io.Discard, out)
	if err := <-served; err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
}
