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
	// sessions: the client speaks 2026-07-28 and 2025-11-25, and its users are served
	// better on the latter, where tool_search unlocks tools into its own list; its
	// server/discover is refused so that it initializes there (see Server.Refused).
	sessions bool
}

// habits maps the clientInfo.name a client gives in initialize to its habit. Clients not
// named here hold until they re-list, and stop holding once they have let a hold run out;
// named ones keep their habit through a slow moment. Each rests on what the real client did
// in its end-to-end test (docs/clients.md, "What each client does with a search"); every
// one of these gives its model one copy of a result that carries two.
var habits = map[string]habit{
	// Claude Code re-lists at once; the hold puts the unlocked tool in the next model request.
	"claude-code": {textOnly: true, sessions: true},
	// Codex never re-lists by default, and with mcp_tool_list_changed on only after the
	// result: a hold would only delay it.
	"codex-mcp-client": {noHold: true, textOnly: true},
	// Gemini CLI re-lists at once but applies the list in the background, after it may
	// already have built the next model request: the hold lasts a little longer.
	"gemini-cli-mcp-client": {settle: 300 * time.Millisecond, textOnly: true},
	// opencode can go seconds without reading early in a session, the result included, so a
	// longer hold costs nothing.
	"opencode": {wait: 5 * time.Second, textOnly: true},
	// Copilot CLI re-lists once it reads the result, if list_changed came before: a hold only
	// delays that.
	"copilot-cli": {noHold: true, textOnly: true, sessions: true},
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
	sess.urlElicit = req.Params.Capabilities.Elicitation != nil && req.Params.Capabilities.Elicitation.URL != nil
	sess.mu.Unlock()
	s.persist(ctx, sess)
	s.opts.Stats.Opened(name)
	s.log.Info("client connected", "session", sess.id, "client", name, "client_version", req.Params.ClientInfo.Version,
		"protocol", req.Params.ProtocolVersion, "holds", !h.noHold)
	s.watchers.tell(ctx, initialized, sess.id)
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
// for both copies, about twice the tokens of the text alone (docs/clients.md). So the text
// goes alone to the clients known to give their model one copy anyway
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
