package proxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/internal/embedtest"
	"github.com/toolsift/toolsift/internal/mcptest"
)

// TestSearchByMeaning: with embeddings, tool_search finds a tool by a request that shares no
// word with it; the catalog's changes reach the engine, which computes the new vectors; and
// with the API down, the same search answers by words at once, without an error.
func TestSearchByMeaning(t *testing.T) {
	api := embedtest.New(t)
	eng := embedding.New(embedding.Options{URL: api.Base(), Model: "fake", Timeout: time.Second})
	t.Cleanup(func() { eng.Close() })
	gh := &fakeConn{tools: []json.RawMessage{tool("create_issue", "Create a new issue"), tool("list_issues", "List issues"), tool("send_message", "Send a message")}}
	url, notify := serveOneWith(t, gh, Options{ListWait: 50 * time.Millisecond, Embeddings: eng})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := eng.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	c := connect(t, url)
	search := func(query string) SearchResult {
		res := c.call(t, SearchTool, map[string]any{"query": query})
		var sr SearchResult
		if res.IsError || json.Unmarshal([]byte(mcptest.Text(res)), &sr) != nil {
			t.Fatalf("tool_search %q = %s", query, mcptest.Text(res))
		}
		return sr
	}
	if sr := search("lodge a complaint"); len(sr.Matches) == 0 || sr.Matches[0].Name != "gh__create_issue" {
		t.Errorf("by meaning: %+v", sr.Matches)
	}

	_, before := api.Requests()
	gh.tools = []json.RawMessage{tool("create_issue", "Create a new issue"), tool("list_issues", "List every issue"), tool("send_message", "Send a message")}
	notify("notifications/tools/list_changed")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, inputs := api.Requests()
		if slices.ContainsFunc(inputs[len(before):], func(s string) bool { return strings.Contains(s, "List every issue") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the changed tool's vector was not computed; asked for %q", inputs[len(before):])
		}
		time.Sleep(10 * time.Millisecond)
	}

	api.Close()
	start := time.Now()
	if sr := search("lodge a complaint message"); len(sr.Matches) != 1 || sr.Matches[0].Name != "gh__send_message" {
		t.Errorf("with the API down: %+v, want the words' one match", sr.Matches)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("with the API down, the search took %v", took)
	}
}
