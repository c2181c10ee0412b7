package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// pendingSplice is a response being written with bytes to splice in: a tools/list response,
// its tools (nil if none) and, where its writing counts as the session's re-list, whose it
// is and with which unlocks; or a tool_search result, its text item and structuredContent
// (see splicedText).
type pendingSplice struct {
	tools   []*form
	sess    *session
	version int

	content, structured []byte
}

// splice returns msg, the response pl is for, with pl's bytes in place of their placeholders.
func (pl pendingSplice) splice(msg []byte) []byte {
	if pl.tools != nil {
		return spliceTools(msg, pl.tools)
	}
	if pl.content != nil {
		msg = replace(msg, contentPlaceholder, pl.content)
	}
	if pl.structured != nil {
		msg = replace(msg, structuredPlaceholder, pl.structured)
	}
	return msg
}

// pendingSplices holds the responses a transport is about to write with bytes to splice in, by
// JSON id. A transport that writes every response through pendingSplices.take, and splices
// what it returns, puts one in the context of its requests: stdio, one for its connection;
// streamable HTTP, one for each tools/list and tools/call request. Over any other transport
// (legacy SSE, in-process) mcp-go encodes everything itself.
//
// Splicing skips mcp-go's encoding of a list, which encodes each tool through a map and
// checks every byte of its schemas twice more: 500 tools take 9–11 ms that way, and a
// splice copies their bytes. A tool_search result's text, JSON in a JSON string, would be
// escaped by mcp-go and then checked again byte by byte.
type pendingSplices struct {
	// relist, fixed at creation, is set where a list counts as the session's re-list only
	// once its response is written (stdio: see session, step 4).
	relist bool

	mu sync.Mutex // guards m
	m  map[string]pendingSplice
	n  atomic.Int32 // len(m), for writers of other messages to skip the lock
}

type pendingSplicesKey struct{}

// withPendingSplices returns ctx for a transport that writes through lists.
func withPendingSplices(ctx context.Context, lists *pendingSplices) context.Context {
	return context.WithValue(ctx, pendingSplicesKey{}, lists)
}

func pendingSplicesFrom(ctx context.Context) *pendingSplices {
	lists, _ := ctx.Value(pendingSplicesKey{}).(*pendingSplices)
	return lists
}

// add records a response about to be written.
// It reports false, and records nothing, when a response with the same id is pending: a
// client that reuses an id in flight would have the two told apart by nothing, and each is
// then written as mcp-go encodes it, unspliced.
func (p *pendingSplices) add(id string, pl pendingSplice) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]pendingSplice{}
	}
	if _, taken := p.m[id]; taken {
		return false
	}
	p.m[id] = pl
	p.n.Store(int32(len(p.m)))
	return true
}

// take returns, and forgets, the pending splice that msg answers, if any. msg is a message as
// the transport writes it: JSON, or an SSE event whose data is JSON.
func (p *pendingSplices) take(msg []byte) (pendingSplice, bool) {
	if p == nil || p.n.Load() == 0 {
		return pendingSplice{}, false
	}
	start := bytes.IndexByte(msg, '{')
	if start < 0 {
		return pendingSplice{}, false
	}
	id, ok := responseID(msg[start:])
	if !ok {
		return pendingSplice{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pl, ok := p.m[string(id)]
	delete(p.m, string(id))
	p.n.Store(int32(len(p.m)))
	return pl, ok
}

// listPlaceholder stands in a spliced tools/list for its tools, and listPlaceholderJSON is
// how mcp-go writes it. The colon keeps it from being any upstream tool's exposed name.
var (
	listPlaceholder     = mcp.Tool{Name: "toolsift:tools", RawInputSchema: json.RawMessage(`{}`)}
	listPlaceholderJSON = func() []byte { b, _ := json.Marshal(listPlaceholder); return b }()
)

// spliceTools returns msg, a tools/list response, with the placeholder replaced by the tools.
func spliceTools(msg []byte, tools []*form) []byte {
	at := bytes.Index(msg, listPlaceholderJSON)
	if at < 0 {
		return msg
	}
	size := len(msg) - len(listPlaceholderJSON) + len(tools)
	for _, f := range tools {
		size += len(f.raw)
	}
	out := make([]byte, 0, size)
	out = append(out, msg[:at]...)
	for i, f := range tools {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, f.raw...)
	}
	return append(out, msg[at+len(listPlaceholderJSON):]...)
}

// responseWatcher passes a transport's output through: it splices the responses pending in
// lists (tools/list, tool_search), and reports each tools/list response once it has been
// written (step 4).
type responseWatcher struct {
	mu    sync.Mutex // serializes writes to w: answers, notifications, toolsift's own refusals
	w     io.Writer
	lists *pendingSplices
	// answered, if set, is told the id of each answer written (see drainReader).
	answered func(id []byte)
}

// Write writes p, one JSON-RPC message, spliced if it is pending, and then, if it was a
// pending tools/list response, marks its session listed.
func (rw *responseWatcher) Write(p []byte) (int, error) {
	return rw.writeAfter(nil, p)
}

// writeAfter is Write, with before, whole messages written as they are, written first in
// the same call to the underlying writer. p may be nil.
func (rw *responseWatcher) writeAfter(before, p []byte) (int, error) {
	n := len(p)
	if p == nil {
		if before == nil {
			return n, nil
		}
		rw.mu.Lock()
		_, err := rw.w.Write(before)
		rw.mu.Unlock()
		return n, err
	}
	pl, listed := rw.lists.take(p)
	msg := pl.splice(unwrapBigID(p))
	if before != nil {
		msg = append(before, msg...)
	}
	rw.mu.Lock()
	_, err := rw.w.Write(msg)
	rw.mu.Unlock()
	if err != nil {
		n = 0
	}
	if rw.answered != nil {
		if id, ok := responseID(p); ok {
			rw.answered(id)
		}
	}
	if listed && pl.sess != nil {
		pl.sess.markListed(pl.version)
	}
	return n, err
}

// contentPlaceholder and structuredPlaceholder stand in a spliced tool_search result for its
// text item and structuredContent. The colons keep them from being anything a model wrote.
var (
	contentPlaceholder    = []byte(`{"toolsift:spliced":"content"}`)
	structuredPlaceholder = []byte(`{"toolsift:spliced":"structured"}`)
)

// splicedText is a tool_search result's text item, item, encoded as mcp-go would encode it.
// Where the transport splices, afterCallTool sets placeheld, mcp-go writes the placeholder,
// and the item is spliced in as the response is written; elsewhere mcp-go writes the item.
type splicedText struct {
	mcp.TextContent // only to satisfy mcp.Content (see passthrough)
	item            []byte
	placeheld       bool // set before mcp-go encodes the result, on the same goroutine
}

func (t *splicedText) MarshalJSON() ([]byte, error) {
	if t.placeheld {
		return contentPlaceholder, nil
	}
	return t.item, nil
}

// afterCallTool arranges for a tool_search result to be spliced into its response as the
// transport writes it (see splicedText): mcp-go leaves the tool call's id only to hooks.
func (s *Server) afterCallTool(ctx context.Context, id any, _ *mcp.CallToolRequest, result any) {
	res, ok := result.(*mcp.CallToolResult)
	if !ok || len(res.Content) != 1 {
		return
	}
	text, ok := res.Content[0].(*splicedText)
	lists := pendingSplicesFrom(ctx)
	if !ok || lists == nil {
		return
	}
	key, err := json.Marshal(id)
	if err != nil {
		return
	}
	pl := pendingSplice{content: text.item}
	structured := len(res.RawStructuredContent) > 0
	if structured {
		// As mcp-go writes raw JSON: with <, > and & escaped.
		var b bytes.Buffer
		json.HTMLEscape(&b, res.RawStructuredContent)
		pl.structured = b.Bytes()
	}
	if !lists.add(string(key), pl) {
		return
	}
	if structured {
		res.RawStructuredContent = structuredPlaceholder
	}
	text.placeheld = true
}

// replace returns msg with the first old in it replaced by new.
func replace(msg, old, new []byte) []byte {
	at := bytes.Index(msg, old)
	if at < 0 {
		return msg
	}
	out := make([]byte, 0, len(msg)-len(old)+len(new))
	out = append(out, msg[:at]...)
	out = append(out, new...)
	return append(out, msg[at+len(old):]...)
}

// encodeJSON encodes v as a tool_search result carries it: without HTML escaping, since the
// model reads "<" better than "\u003c".
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// appendEscaped appends p as mcp-go writes it inside a JSON string. Escaping is rune by rune,
// so pieces of a text escaped apart join into the escaped text.
func appendEscaped(dst, p []byte) []byte {
	q, _ := json.Marshal(string(p))
	return append(dst, q[1:len(q)-1]...)
}

// escapeJSON returns p escaped as appendEscaped escapes it.
func escapeJSON(p []byte) []byte { return appendEscaped(nil, p) }
