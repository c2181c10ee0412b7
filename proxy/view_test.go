package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/gate"
	"github.com/toolsift/toolsift/upstream"
)

// TestListOverHTTP lists a session's tools over toolsift's streamable HTTP front end and
// over mcp-go's own HTTP server: the gate changes nothing of the list, which has the tool
// the session unlocked.
func TestListOverHTTP(t *testing.T) {
	p := newTestProxy(t)
	h, shutdown := gate.Handler(p, gate.Options{})
	gated := httptest.NewServer(h)
	t.Cleanup(func() { gated.Close(); shutdown(context.Background()) })
	plain := httptest.NewServer(server.NewStreamableHTTPServer(p.MCP(), server.WithStateful(true)))
	t.Cleanup(plain.Close)

	var lists [][]byte
	for _, url := range []string{gated.URL + "/mcp", plain.URL} {
		id := post(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`)
		post(t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		post(t, url, id, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"gh__create_issue","arguments":{"x":"1"}}}}`)
		lists = append(lists, bodyOf(t, url, id, `{"jsonrpc":"2.0","id":"list-3","method":"tools/list","params":{}}`))
	}
	if !bytes.Equal(lists[0], lists[1]) {
		t.Fatalf("the gate's list differs from mcp-go's:\n%s\n%s", lists[0], lists[1])
	}
	if !bytes.Contains(lists[0], []byte(`"name":"gh__create_issue"`)) {
		t.Errorf("list = %s", lists[0])
	}
}

// post sends one message in a session (none if id is ""), and returns the session's id.
func post(t *testing.T, url, id, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set(server.HeaderKeySessionID, id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %s", body, resp.Status)
	}
	return resp.Header.Get(server.HeaderKeySessionID)
}

// bodyOf sends one request in a session and returns its response's body.
func bodyOf(t *testing.T, url, id, body string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(server.HeaderKeySessionID, id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// TestListSearchAndCallShareForms checks that every session lists a tool from one form per
// catalog, and a new catalog makes new ones.
func TestListSearchAndCallShareForms(t *testing.T) {
	ups := newBenchUpstreams(benchTools(t, 50))
	p := New(ups, Options{})
	t.Cleanup(func() { p.Close() })
	name := ups.Catalog().Tools[3].Exposed
	a, _ := p.view().form(name)
	b, _ := p.view().form(name)
	if a != b {
		t.Error("one catalog, two forms of a tool")
	}
	ups.set(upstream.NewCatalog(ups.Catalog().Tools))
	if c, _ := p.view().form(name); c == a {
		t.Error("a new catalog reuses the old catalog's form")
	}
	if a.tool.Name != name || a.match.Name != name {
		t.Errorf("form of %s: tool %s, match %s", name, a.tool.Name, a.match.Name)
	}
}
