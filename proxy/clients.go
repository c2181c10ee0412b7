package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/habit"
	"github.com/toolsift/toolsift/internal/identity"
)

// knownHabit is what toolsift knows, ahead of any session, of how a client treats
// notifications/tools/list_changed (see session, and docs/clients.md).
type knownHabit struct {
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
// named here hold until they re-list, stop holding once they have let a hold run out, and
// what they showed is kept for their next session (Options.Habits); named ones keep their
// habit through a slow moment. The first five rest on what the real client did in its
// end-to-end test, and each of them gives its model one copy of a result that carries two;
// the others on the client's public source or reports, read for issue 40
// (docs/clients.md, "What each client does with a search").
var habits = map[string]knownHabit{
	// Cursor re-reads a changed list only on a manual refresh, and loads tool descriptions
	// on demand itself; its model uses call_tool.
	"cursor-vscode": {noHold: true},
	// VS Code re-lists at once, but its agent gives its model a re-listed tool only from the
	// next user message (microsoft/vscode#303012).
	"Visual Studio Code":            {noHold: true},
	"Visual Studio Code - Insiders": {noHold: true},
	// Zed re-lists at once but gives its model the tools of the turn's start; Cline re-lists
	// after 300 ms and applies the list between turns; Continue does not re-list.
	"Zed":                 {noHold: true},
	"Cline":               {noHold: true},
	"continue-client":     {noHold: true},
	"continue-cli-client": {noHold: true},
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

// Habits keeps what sessions learn of their clients (package habit's File).
type Habits interface {
	// Lookup returns what was learned of a client, if anything.
	Lookup(k habit.Key) (habit.Client, bool)
	// Learn records whether the client re-lists before reading a result, or only after
	// (late).
	Learn(ctx context.Context, k habit.Key, relists, late bool) error
	// Know records a client of the table above, for status to show.
	Know(ctx context.Context, k habit.Key, relists bool) error
	// Saw records that the client was seen, so that it is kept.
	Saw(ctx context.Context, k habit.Key) error
}

// Where a session's habit comes from.
const (
	fromDefault = iota // neither known nor learned: hold until shown otherwise
	fromTable          // habits
	fromLearned        // Options.Habits
)

// afterInitialize notes who the client is and applies its habit to the session: the
// table's, else what an earlier session of the client learned, else the default (hold).
func (s *Server) afterInitialize(ctx context.Context, _ any, req *mcp.InitializeRequest, _ *mcp.InitializeResult) {
	sess := s.sessionFrom(ctx)
	name, version := req.Params.ClientInfo.Name, req.Params.ClientInfo.Version
	key := habitKey(sess, name, version)
	h, known := habits[name]
	from, late, lateSince := fromDefault, false, time.Time{}
	switch {
	case known:
		from = fromTable
		s.recordHabit(sess, "", func(ctx context.Context, hs Habits) error { return hs.Know(ctx, key, !h.noHold) })
	case s.opts.Habits != nil:
		if c, ok := s.opts.Habits.Lookup(key); ok {
			from, late, lateSince = fromLearned, c.Late, c.Learned
			h.noHold = !c.Relists
			s.recordHabit(sess, "", func(ctx context.Context, hs Habits) error { return hs.Saw(ctx, key) })
		}
	}
	sess.mu.Lock()
	sess.client, sess.clientVersion, sess.protocol = name, version, req.Params.ProtocolVersion
	sess.habitFrom, sess.late, sess.lateSince = from, late, lateSince
	sess.holds = !h.noHold
	sess.settle = h.settle
	sess.wait = h.wait
	sess.samples = req.Params.Capabilities.Sampling != nil
	sess.urlElicit = req.Params.Capabilities.Elicitation != nil && req.Params.Capabilities.Elicitation.URL != nil
	sess.mu.Unlock()
	s.persist(ctx, sess)
	s.opts.Stats.Opened(name)
	s.log.Info("client connected", "session", sess.id, "client", name, "client_version", version,
		"protocol", req.Params.ProtocolVersion, "holds", !h.noHold, "habit", [...]string{"default", "known", "learned"}[from])
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

// habitKey names the session's client for Options.Habits: on a shared service, with the
// person whose session it is, so that nobody's client teaches anybody else's.
func habitKey(sess *session, name, version string) habit.Key {
	k := habit.Key{Name: name, Version: version}
	if u := sess.who(); u.Kind != identity.Local {
		k.User = u.Key
	}
	return k
}

// recordHabit has write record in Options.Habits, on the goroutine that writes them in
// order (see habitWriter); learned, if set, is logged once it is.
func (s *Server) recordHabit(sess *session, learned string, write func(context.Context, Habits) error) {
	if s.opts.Habits == nil {
		return
	}
	s.habits.do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := write(ctx, s.opts.Habits); err != nil {
			s.log.Warn("client habit not recorded", "session", sess.id, "error", err)
			return
		}
		if learned != "" {
			s.log.Info("client habit learned", "session", sess.id, "habit", learned)
		}
	})
}

// habitWriter records habits one at a time, in the order sessions learned them: a re-list
// that follows a hold that ran out must not be written before it.
type habitWriter struct {
	mu     sync.Mutex // guards queue, busy and closed
	queue  []func()
	busy   bool // a goroutine is draining queue; wg counts it
	closed bool
	wg     sync.WaitGroup
}

// do runs f after the writes before it, on a goroutine of the writer's; after close, never.
func (w *habitWriter) do(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || len(w.queue) >= 64 {
		return // a habit not recorded is learned again
	}
	w.queue = append(w.queue, f)
	if !w.busy {
		w.busy = true
		w.wg.Go(w.drain)
	}
}

func (w *habitWriter) drain() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.busy = false
			w.mu.Unlock()
			return
		}
		f := w.queue[0]
		w.queue = w.queue[1:]
		w.mu.Unlock()
		f()
	}
}

// close lets the writes queued finish, and takes no more.
func (w *habitWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wg.Wait()
}
