package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/upstream"
)

// TestSplicedSearchResult checks that a tool_search result spliced as it is written is, byte
// for byte, the response mcp-go writes when it encodes the result itself, for hostile text:
// HTML, line separators, escapes, the placeholders themselves, invalid UTF-8.
func TestSplicedSearchResult(t *testing.T) {
	hostile := []upstream.Tool{
		{Exposed: "a__html", Server: "a", Description: "Reads <b>bold</b> & \"quoted\" text.\u2028Next line\\n.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","description":"<x> & \u2029 \\\"y\\\""}}}`)},
		{Exposed: "a__placeholder", Server: "a", Description: `{"toolsift:spliced":"content"}`,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"toolsift:spliced":{"const":"structured"}},"x":{"toolsift:spliced":"structured"}}`)},
		{Exposed: "a__bytes", Server: "a", Description: "bad \xff\xfe utf-8, 中文, emoji 🙂, tab\t.",
			InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Exposed: "a__empty", Server: "a"},
	}
	var forms []*form
	for _, tool := range hostile {
		forms = append(forms, newForm(tool))
	}
	results := []SearchResult{
		{Query: `find <b> & "x" \u2028 ` + "\u2028\xff", Unlocked: []string{"a__html"}, Hint: "Call <it> & see."},
		{Query: `{"toolsift:spliced":"content"}`, Unlocked: []string{}, Unknown: []string{"zz"}, Dropped: []string{"b"}, Unavailable: []string{"c (failed)"}, Hint: "h"},
	}
	for _, structured := range []bool{false, true} {
		sess := &session{client: "codex-mcp-client"} // text only
		if structured {
			sess.client = "golden"
		}
		for i, res := range results {
			for _, matched := range [][]*form{nil, forms[:1], forms} {
				want := respond(t, searchResult(context.Background(), sess, res, matched))

				lists := &pendingSplices{}
				ctx := withPendingSplices(context.Background(), lists)
				out := searchResult(ctx, sess, res, matched)
				s := &Server{}
				s.afterCallTool(ctx, int64(7), nil, out)
				msg := respond(t, out)
				if !bytes.Contains(msg, contentPlaceholder) || structured && !bytes.Contains(msg, structuredPlaceholder) {
					t.Fatalf("result %d: no placeholder in %s", i, msg)
				}
				pl, ok := lists.take(msg)
				if !ok {
					t.Fatalf("result %d: nothing pending for id 7", i)
				}
				if got := pl.splice(msg); !bytes.Equal(got, want) {
					t.Errorf("structured=%v result %d with %d matches:\nspliced %s\nmcp-go  %s", structured, i, len(matched), got, want)
				}
			}
		}
	}
}

// respond encodes a tool call's response as mcp-go's transports do.
func respond(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	msg, err := json.Marshal(mcp.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(7)), Result: res})
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestCallFlushesOverStdio: a call that unlocks a tool announces it, and over stdio its
// result follows the notification as soon as that is written, with no flush marker in the
// output: forwardGrace, stretched to a minute here, is not waited out.
func TestCallFlushesOverStdio(t *testing.T) {
	defer func(g time.Duration) { forwardGrace = g }(forwardGrace)
	forwardGrace = time.Minute
	c := newTranscript(t, newGoldenProxy(t))
	c.initialize()
	for _, tool := range []string{"gh__create_issue", "gh__list_issues", "chat__send_message"} {
		id := c.send("tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": tool, "arguments": map[string]any{}}})
		c.expect("notifications/tools/list_changed")
		c.expect(id)
	}
	for _, s := range c.sections {
		if bytes.Contains(s.data, []byte(flushMethod)) {
			t.Errorf("a flush marker was written: %s", s.data)
		}
	}
}

// TestSplicedIDTwice: a second response pending under an id already pending (a client that
// reuses an id in flight) is written as mcp-go encodes it, never with a placeholder, and the
// first is still spliced.
func TestSplicedIDTwice(t *testing.T) {
	f := newForm(upstream.Tool{Exposed: "a__x", Server: "a", Description: "X <y>.", InputSchema: json.RawMessage(`{"type":"object"}`)})
	sess := &session{client: "golden"} // structured too
	res := SearchResult{Query: "x", Unlocked: []string{}, Hint: "h"}
	want := respond(t, searchResult(context.Background(), sess, res, []*form{f}))
	lists := &pendingSplices{}
	ctx := withPendingSplices(context.Background(), lists)
	s := &Server{}
	first, second := searchResult(ctx, sess, res, []*form{f}), searchResult(ctx, sess, res, []*form{f})
	s.afterCallTool(ctx, int64(7), nil, first)
	s.afterCallTool(ctx, int64(7), nil, second)
	if got := respond(t, second); !bytes.Equal(got, want) {
		t.Errorf("second response under id 7:\n%s\nwant %s", got, want)
	}
	msg := respond(t, first)
	pl, ok := lists.take(msg)
	if !ok {
		t.Fatal("the first response is not pending")
	}
	if got := pl.splice(msg); !bytes.Equal(got, want) {
		t.Errorf("first response spliced:\n%s\nwant %s", got, want)
	}
}
