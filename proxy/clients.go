package proxy

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// habit is what toolsift knows, ahead of any session, of how a client treats
// notifications/tools/list_changed (see session, and docs/clients.md).
type habit struct {
	// noHold: the client does not re-list before it reads the result of the call that
	// unlocked tools, so holding that result only delays it.
	noHold bool
	// settle: the client applies a re-listed tool list asynchronously; hold the result this
	// much longer once the re-list is written.
	settle time.Duration
	// wait, if set, replaces Options.ListWait: the client may go a while without reading
	// anything, and re-list once it does.
	wait time.Duration
	// textOnly: the client's model is given one copy of a result however many it carries,
	// so tool_search sends its text alone (see session.structured).
	textOnly bool
}

// habits maps the clientInfo.name a client gives in initialize to its habit. Clients not
// named here hold until they re-list, and stop holding once they have let a hold run out;
// named ones keep their habit through a slow moment.
//
// What each gives its model of a result with both text and structuredContent, as read in
// the pinned clients (tests/package.json) and, for Codex and opencode, seen by the scripted
// model of their end-to-end tests with the two copies made to differ: one copy, never both.
var habits = map[string]habit{
	// Claude Code 2.1: re-lists at once; the hold (6–22 ms) puts the unlocked tool in the next
	// model request. Its transformMCPResult gives the model structuredContent, serialized,
	// in place of the text blocks when there is any, else the text.
	"claude-code": {textOnly: true},
	// Codex CLI 0.171: never re-lists by default; with mcp_tool_list_changed on, only after
	// the result. Its model got the structuredContent alone ("Output:" and the JSON), or,
	// without it, the text alone as an input_text item.
	"codex-mcp-client": {noHold: true, textOnly: true},
	// Gemini CLI 0.61: re-lists at once, then registers the tools and rebuilds its model
	// context in the background; the unlocked tool reached the next model request 1 time in
	// 10 with no settle, 7 in 7 with 50 ms, and missed once in 3 with 100 ms on a loaded
	// machine. A model turn takes seconds: 300 ms is cheap insurance. Its model gets the
	// content blocks only (transformMcpContentToParts).
	"gemini-cli-mcp-client": {settle: 300 * time.Millisecond, textOnly: true},
	// opencode 1.18: re-lists 10–74 ms after list_changed, but early in a session it can read
	// nothing from its servers for 2.5–3.5 s; while it does not read, it does not read the
	// result either, so a longer hold costs nothing. Its model got the text alone.
	"opencode": {wait: 5 * time.Second, textOnly: true},
	// Copilot CLI 1.0.102: re-lists once it reads the result, if list_changed came before
	// (with a hold, it re-listed only after the hold ran out, 1.5 s later), and the
	// unlocked tool is in its next model request. Its model got the text alone.
	"copilot-cli": {noHold: true, textOnly: true},
}

// afterInitialize notes who the client is and applies its habit to the session.
func (s *Server) afterInitialize(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	sess := s.sessionFrom(ctx)
	name := req.Params.ClientInfo.Name
	h := habits[name]
	sess.mu.Lock()
	sess.client, sess.protocol = name, req.Params.ProtocolVersion
	sess.holds = !h.noHold
	sess.settle = h.settle
	sess.wait = h.wait
	sess.samples = req.Params.Capabilities.Sampling != nil
	sess.mu.Unlock()
	s.log.Info("client connected", "session", sess.id, "client", name, "client_version", req.Params.ClientInfo.Version,
		"protocol", req.Params.ProtocolVersion, "holds", !h.noHold)
}

// structuredSince is the first protocol revision with structuredContent.
const structuredSince = "2025-06-18"

// structured reports whether the session's tool_search results carry their matches twice,
// as structuredContent beside the JSON text.
//
// tool_search declares no outputSchema, so structuredContent is optional (MCP 2025-06-18 and
// 2025-11-25, "Structured Content"), and the text is what every client reads: the spec asks
// a tool that returns structured content to return it serialized in a TextContent block
// too, for backwards compatibility. A client that shows its model the whole result pays
// for both copies: at 5 matches a result comes to about 2,170 tokens, its text alone to
// 1,046. So the text goes alone to the clients known to give their model one copy anyway
// (see habits), and to a client whose protocol revision predates structuredContent. Any
// other client gets both, as the spec recommends: toolsift cannot tell whether it reads
// structuredContent alone (a program rather than a model may), and a missing field would
// break it where a second copy only costs tokens.
func (sess *session) structured() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if h, known := habits[sess.client]; known {
		return !h.textOnly
	}
	// Revisions are dates, which compare as strings.
	return sess.protocol == "" || sess.protocol >= structuredSince
}
