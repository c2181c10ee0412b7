package proxy

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// Names of the meta-tools.
const (
	SearchTool = "tool_search" // upstream.Reserved keeps upstream tools off these names
	CallTool   = "call_tool"
)

// metaAlwaysLoad is the _meta key that makes Claude Code put a tool in the model's tools
// array from the first request instead of deferring it behind its own search.
const metaAlwaysLoad = "anthropic/alwaysLoad"

// Result size limits for tool_search.
const (
	defaultResults = 5
	maxResults     = 25
)

var (
	searchSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"Keywords for the capability you need, such as \"create issue\" or \"read file\". Prefix a word with + to require it (+github); server:NAME searches one server. Or select:name1,name2 to fetch tools by exact name."},` +
		`"max_results":{"type":"integer","minimum":1,"maximum":25,"default":5,"description":"How many matches to return (default 5, at most 25)."}` +
		`},"required":["query"]}`)
	callSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"The tool's exact name, as tool_search returned it."},` +
		`"arguments":{"type":"object","description":"The tool's arguments, matching its inputSchema."}` +
		`},"required":["name"]}`)
)

func boolPtr(b bool) *bool { return &b }

// searchToolDef describes tool_search, listing what the servers offer so that the model
// knows what it can search for.
func searchToolDef(statuses []upstream.Status, broken string) mcp.Tool {
	var b strings.Builder
	if broken != "" {
		b.WriteString(brokenText(broken) + "\n\n")
	}
	b.WriteString("Find tools for a task. Most tools of the connected servers are hidden until searched for: " +
		"whenever you need a capability you do not see, search here before concluding it does not exist. " +
		"Query with keywords (\"create issue\", \"send message\"), +word to require a word, server:NAME for one server, select:name1,name2 for tools you know by name, or group:NAME for every tool of a server or group. " +
		"Matches come back with their input schemas; call them at once through call_tool, or from your tool list once they appear there. " +
		"If nothing fits, search again with other words.")
	var up, down []upstream.Status
	for _, st := range statuses {
		switch {
		case st.State == upstream.StateDisabled:
		case st.State.Usable() || st.Tools > 0:
			// A server whose tools are known, from the cache or from before it crashed, is
			// listed: a call waits for it to start. This text is part of every prompt, so it
			// must not change while servers start and restart.
			up = append(up, st)
		default:
			down = append(down, st)
		}
	}
	var d directory
	if len(up) > 0 {
		b.WriteString("\n\nServers:")
		d.write(&b, up, func(st upstream.Status, full bool) string {
			line := fmt.Sprintf("%s (%d tools)", st.Name, st.Tools)
			if full && st.Summary != "" {
				line += ": " + search.FirstLine(st.Summary, 160)
			}
			return line
		})
	}
	if len(down) > 0 {
		b.WriteString("\n\nNot available right now:")
		d.write(&b, down, func(st upstream.Status, _ bool) string { return fmt.Sprintf("%s (%s)", st.Name, st.State) })
	}
	return mcp.Tool{
		Name:           SearchTool,
		Description:    b.String(),
		RawInputSchema: searchSchema,
		Annotations: mcp.ToolAnnotation{
			Title:           "Search tools",
			ReadOnlyHint:    boolPtr(true),
			DestructiveHint: boolPtr(false),
			IdempotentHint:  boolPtr(false), // it unlocks tools for the session
			OpenWorldHint:   boolPtr(false),
		},
		Meta: alwaysLoadMeta(nil),
	}
}

// brokenText says that toolsift runs no server because its configuration could not be
// read, and what the user must do.
func brokenText(err string) string {
	return "toolsift could not read its configuration, so it runs no server: " + err +
		" Tell the user: fix the file, then restart the client (or this MCP server)."
}

// directoryBytes bounds the directory of servers in tool_search's description, which is
// part of every model request: clients cut a description past a few thousand characters
// (Claude Code at 4,096), and with thousands of servers it would cost more than the tools
// it hides. Servers are listed with their summaries while those fit in half of it, then by
// name, then counted.
const directoryBytes = 6000

// directory writes lists of servers within directoryBytes.
type directory struct {
	used int // bytes written
}

// write appends a list of servers: a line each, with line(st, true), while the lines fit
// in half the budget; then names on one line, with line(st, false), while they fit; then
// how many are left out.
func (d *directory) write(b *strings.Builder, servers []upstream.Status, line func(st upstream.Status, full bool) string) {
	i := 0
	for ; i < len(servers); i++ {
		l := "\n- " + line(servers[i], true)
		if d.used+len(l) > directoryBytes/2 {
			break
		}
		b.WriteString(l)
		d.used += len(l)
	}
	for sep := "\n- "; i < len(servers); i, sep = i+1, ", " {
		l := sep + line(servers[i], false)
		if d.used+len(l) > directoryBytes {
			break
		}
		b.WriteString(l)
		d.used += len(l)
	}
	if left := len(servers) - i; left > 0 {
		fmt.Fprintf(b, "\n- and %d more servers (search finds their tools too)", left)
	}
}

func callToolDef() mcp.Tool {
	return mcp.Tool{
		Name: CallTool,
		Description: "Call any tool that tool_search found, by its exact name, with its arguments. " +
			"Use it when a tool tool_search returned is not yet in your tool list.",
		RawInputSchema: callSchema,
		Annotations: mcp.ToolAnnotation{
			Title:         "Call a tool",
			OpenWorldHint: boolPtr(true),
		},
		Meta: alwaysLoadMeta(nil),
	}
}

// exposedTool converts an upstream tool to what the client sees: its fields as the server
// sent them (schemas byte for byte), its exposed name, and the always-load mark.
func exposedTool(t upstream.Tool) mcp.Tool {
	mt := mcp.Tool{
		Name:            t.Exposed,
		Title:           t.Title,
		Description:     t.Description,
		RawInputSchema:  t.InputSchema,
		RawOutputSchema: t.OutputSchema,
	}
	if mt.RawInputSchema == nil {
		mt.RawInputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if len(t.Annotations) > 0 {
		_ = json.Unmarshal(t.Annotations, &mt.Annotations)
	}
	if len(t.Icons) > 0 {
		_ = json.Unmarshal(t.Icons, &mt.Icons)
	}
	if len(t.Execution) > 0 {
		_ = json.Unmarshal(t.Execution, &mt.Execution)
	}
	var meta map[string]any
	if len(t.Meta) > 0 {
		_ = json.Unmarshal(t.Meta, &meta)
	}
	mt.Meta = alwaysLoadMeta(meta)
	return mt
}

func alwaysLoadMeta(fields map[string]any) *mcp.Meta {
	if fields == nil {
		fields = map[string]any{}
	}
	fields[metaAlwaysLoad] = true
	return &mcp.Meta{AdditionalFields: fields}
}

// firstParagraph returns text up to its first blank line, cut to at most n bytes on a rune
// boundary.
func firstParagraph(text string, n int) string {
	text = strings.TrimSpace(text)
	if i := strings.Index(text, "\n\n"); i >= 0 {
		text = text[:i]
	}
	return cut(text, n)
}

// cut is s cut to n bytes (see search.Cut), with an ellipsis where it was cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return search.Cut(s, n) + "…"
}

// passthrough is a content item kept as the raw JSON the server sent. It embeds a TextContent
// only to satisfy mcp.Content, whose marker method is unexported; MarshalJSON never reads it.
type passthrough struct {
	mcp.TextContent
	raw json.RawMessage
}

func (p passthrough) MarshalJSON() ([]byte, error) { return p.raw, nil }

// passthroughResult rebuilds an upstream tools/call result so that mcp-go re-emits it
// unchanged: content items and structuredContent as raw JSON, isError, and _meta.
func passthroughResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r struct {
		Meta              *mcp.Meta         `json:"_meta"`
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decoding tools/call result: %w", err)
	}
	res := &mcp.CallToolResult{IsError: r.IsError, Content: make([]mcp.Content, 0, len(r.Content))}
	res.Meta = r.Meta
	for _, c := range r.Content {
		res.Content = append(res.Content, passthrough{raw: c})
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		res.RawStructuredContent = r.StructuredContent
		res.StructuredContent = r.StructuredContent
	}
	return res, nil
}

// errorResult is a tool result that tells the model what went wrong.
func errorResult(format string, args ...any) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf(format, args...))
}

// bytesPerToken estimates how many bytes of a tool definition's JSON make one token.
const bytesPerToken = 4

// fitsAll reports whether every tool of v's catalog is listed directly (toolSearch: auto):
// with ListAllUnder set, while the definitions of all the tools, as listed, come to at most
// that many tokens (estimated). Search only pays once listing everything costs more than it.
// The answer is found once per catalog, encoding tools only until they are past the limit.
func (s *Server) fitsAll(v *view) bool {
	if s.opts.ListAllUnder <= 0 {
		return false
	}
	if known := v.fits.Load(); known != 0 {
		return known == 2
	}
	size, fits := 0, true
	for _, t := range v.cat.Tools {
		f, _ := v.form(t.Exposed)
		if size += len(f.raw()); size/bytesPerToken > s.opts.ListAllUnder {
			fits = false
			break
		}
	}
	if fits {
		v.fits.Store(2)
	} else {
		v.fits.Store(1)
	}
	return fits
}
