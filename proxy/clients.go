package proxy

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// habit is what toolsift knows, ahead of any session, of how a client treats
// notifications/tools/list_changed (see session, and README "Clients").
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
}

// habits maps the clientInfo.name a client gives in initialize to its habit. Clients not
// named here hold until they re-list, and stop holding once they have let a hold run out;
// named ones keep their habit through a slow moment.
var habits = map[string]habit{
	// Claude Code 2.1: re-lists at once; the hold (6–22 ms) puts the unlocked tool in the next
	// model request.
	"claude-code": {},
	// Codex CLI 0.171: never re-lists by default; with mcp_tool_list_changed on, only after
	// the result.
	"codex-mcp-client": {noHold: true},
	// Gemini CLI 0.61: re-lists at once, then registers the tools and rebuilds its model
	// context in the background; the unlocked tool reached the next model request 1 time in
	// 10 with no settle, 7 in 7 with 50 ms, and missed once in 3 with 100 ms on a loaded
	// machine. A model turn takes seconds: 300 ms is cheap insurance.
	"gemini-cli-mcp-client": {settle: 300 * time.Millisecond},
	// opencode 1.18: re-lists 10–74 ms after list_changed, but early in a session it can read
	// nothing from its servers for 2.5–3.5 s; while it does not read, it does not read the
	// result either, so a longer hold costs nothing.
	"opencode": {wait: 5 * time.Second},
}

// afterInitialize notes who the client is and applies its habit to the session.
func (s *Server) afterInitialize(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	sess := s.sessionFrom(ctx)
	name := req.Params.ClientInfo.Name
	h := habits[name]
	sess.mu.Lock()
	sess.client = name
	sess.holds = !h.noHold
	sess.settle = h.settle
	sess.wait = h.wait
	sess.samples = req.Params.Capabilities.Sampling != nil
	sess.mu.Unlock()
	s.log.Info("client connected", "session", sess.id, "client", name, "client_version", req.Params.ClientInfo.Version,
		"protocol", req.Params.ProtocolVersion, "holds", !h.noHold)
}
