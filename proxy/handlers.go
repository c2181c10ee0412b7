package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/attribute"

	"github.com/toolsift/toolsift/finder"
	"github.com/toolsift/toolsift/internal/audit"
	"github.com/toolsift/toolsift/internal/identity"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/toolsift/toolsift/internal/trace"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/stats"
	"github.com/toolsift/toolsift/upstream"
)

// Hints end every tool_search result: a missed tool is the worst failure of a lazy proxy,
// because the model concludes the capability does not exist and quietly does less. The bare
// name of a match works through call_tool only: every client shows MCP tools under names of
// its own (mcp__toolsift__NAME, mcp_toolsift_NAME, toolsift_NAME, …).
const (
	hintCall   = `Call a match now with call_tool {"name": NAME, "arguments": {…}}, NAME being the match's name.`
	hintListed = ` Matches also join your tool list, under the name your client gives them (often a prefix and NAME, like mcp__toolsift__NAME); call them there by that name only.`
	hintRetry  = ` If none fits, search again with other words (synonyms, the service's name, or select:name) before concluding the capability does not exist.`
)

const queryHelp = `Write a few keywords for the capability you need, such as "create issue" or "read file"; ` +
	`+word requires a word ("+github pull request"); server:NAME searches one server ("server:slack send"); ` +
	`select:name1,name2 fetches tools by exact name; group:NAME fetches every tool of a server or configured group.`

// Match is one tool_search match.
type Match struct {
	Name        string          `json:"name"`
	Server      string          `json:"server"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// SearchResult is tool_search's result, sent as JSON text and as structuredContent.
type SearchResult struct {
	Query    string   `json:"query"`
	Matches  []Match  `json:"matches"`
	Unlocked []string `json:"unlocked"`
	// Unknown lists select: names that match no tool.
	Unknown []string `json:"unknown,omitempty"`
	// Dropped lists tools that fell out of the session's list to make room (maxUnlocked);
	// call_tool still reaches them.
	Dropped []string `json:"dropped,omitempty"`
	// Unavailable lists servers whose tools could not be searched, and tools held for the
	// user's review.
	Unavailable []string `json:"unavailable,omitempty"`
	Hint        string   `json:"hint"`
	// Savings is one line for a human reading the transcript: the tools behind the search
	// and the tokens a direct listing of them would have sent (Options.Savings).
	Savings string `json:"savings,omitempty"`
}

// maxQueryBytes bounds a tool_search query: it is logged and echoed in the result, and a
// model's query is a few words (select: of 25 long names fits too).
const maxQueryBytes = 2000

func (s *Server) handleSearch(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s.opts.ConfigError != "" {
		return errorResult("%s", brokenText(s.opts.ConfigError)), nil
	}
	var args struct {
		Query      *string `json:"query"`
		MaxResults *int    `json:"max_results"`
	}
	if err := json.Unmarshal(rawArgs(req), &args); err != nil {
		return errorResult("tool_search: arguments must be an object {query, max_results}: %v. %s", err, queryHelp), nil
	}
	if args.Query == nil {
		return errorResult("tool_search: query is required. %s", queryHelp), nil
	}
	if len(*args.Query) > maxQueryBytes {
		return errorResult("tool_search: the query is %d bytes; at most %d. %s", len(*args.Query), maxQueryBytes, queryHelp), nil
	}
	limit := defaultResults
	if args.MaxResults != nil {
		limit = min(max(*args.MaxResults, 1), maxResults)
	}
	q, err := search.ParseQuery(*args.Query)
	if err != nil {
		return errorResult("tool_search: %v in %q. %s", err, *args.Query, queryHelp), nil
	}
	start := time.Now()
	ctx, span := trace.Start(s.traced(ctx, req), "tools/call tool_search", attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", "tool_search"))
	defer span.End()
	sess := s.sessionFrom(ctx)
	carried := s.listing(ctx, sess) // what the model request that searched carried
	unlocks := !stable(ctx) && !s.fitsAll(s.view())
	s.learnAll(ctx, sess)
	find := finder.Request{Query: q, Text: *args.Query, Limit: limit, Admits: sess.admits()}
	if unlocks {
		find.MaxGroup = s.opts.MaxUnlocked
	}
	if s.asksModel(sess) {
		find.Choose = s.chooser(sess)
	}
	found, err := s.finder.Find(ctx, find)
	if err != nil {
		return errorResult("tool_search: %v", err), nil
	}
	unknown, pending, cat := found.Unknown, found.Pending, found.Catalog
	v := s.views.of(cat)
	listsAll := s.fitsAll(v)
	res := SearchResult{Query: *args.Query, Matches: []Match{}, Unlocked: []string{}, Unknown: unknown}
	matched := make([]*form, len(found.Hits))
	tools := make([]upstream.Tool, len(found.Hits))
	for i, h := range found.Hits {
		matched[i], tools[i] = v.formOf(h.Tool), h.Tool
	}
	all := s.ups.Statuses()
	shown := visible(slices.Clone(all), cat, sess.who())
	if len(shown) < len(all) {
		hidden := func(name string) bool {
			return !slices.ContainsFunc(shown, func(st upstream.Status) bool { return st.Name == name }) &&
				slices.ContainsFunc(all, func(st upstream.Status) bool { return st.Name == name })
		}
		pending = slices.DeleteFunc(pending, hidden)
	}
	res.Unavailable = append(res.Unavailable, heldLines(s.ups.Catalog(), sess.admits())...)
	for _, st := range shown {
		// A server starting with its tools known (cached) is searched, and a call waits for
		// it: not something for the model to avoid.
		starting := st.State == upstream.StateStarting && st.Tools > 0
		if !st.State.Usable() && st.State != upstream.StateDisabled && !starting {
			res.Unavailable = append(res.Unavailable, unavailableReason(st))
		}
	}
	hold := holdNone
	if !stable(ctx) && !listsAll {
		added, dropped := s.unlock(sess, cat, tools, s.opts.MaxUnlocked)
		s.persist(ctx, sess) // the order of use changed, if nothing else
		res.Unlocked, res.Dropped = append(res.Unlocked, added...), dropped
		if len(added) > 0 || len(dropped) > 0 {
			// Hold the result until the session has re-listed (see session).
			hold = s.announce(ctx, sess, len(added) > 0, "search")
		}
	}
	res.Hint = hintCall
	if sess.relists() && !stable(ctx) {
		res.Hint += hintListed
	}
	res.Hint += hintRetry
	if u := sess.who(); u.Kind != identity.Local {
		res.Hint = s.signInHint(ctx, sess, found.Hits) + res.Hint
	}
	if len(found.Hits) == 0 {
		res.Hint = "No tool matched. " + res.Hint
	}
	if len(pending) > 0 {
		res.Hint = fmt.Sprintf("Servers still starting, not searched yet: %s. Search again in a few seconds. ", strings.Join(pending, ", ")) + res.Hint
	}
	s.log.Info("tool search", "session", sess.id, "query", *args.Query, "results", found.Names(),
		"unlocked", len(res.Unlocked), "dropped", len(res.Dropped), "pending", pending, "hold", hold,
		"duration_ms", time.Since(start).Milliseconds())
	s.opts.Metrics.Searched(len(found.Hits), time.Since(start))
	span.SetAttributes(attribute.Int("toolsift.matches", len(found.Hits)))
	if s.opts.Savings {
		res.Savings = s.savings(ctx, sess)
	}
	out := searchResult(sess, res, matched)
	if s.opts.Stats != nil {
		text := out.Content[0].(mcp.TextContent).Text
		// The model wrote the query: it may quote a secret it was shown.
		query := s.opts.Redactor.String(*args.Query)
		s.opts.Stats.Searched(sess.id, sess.clientName(), query, found.Names(), []byte(text), carried)
	}
	return out, nil
}

// searchResult encodes a tool_search result with the given matches: always as JSON text,
// and as structuredContent too for the clients whose model reads it instead (see
// session.structured).
func searchResult(sess *session, res SearchResult, matched []*form) *mcp.CallToolResult {
	res.Matches = make([]Match, len(matched))
	for i, f := range matched {
		res.Matches[i] = f.match
	}
	text := encodeJSON(res)
	out := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(text))}}
	if sess.structured() {
		out.RawStructuredContent = text
		out.StructuredContent = json.RawMessage(text)
	}
	return out
}

func (s *Server) handleCall(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s.opts.ConfigError != "" {
		return errorResult("%s", brokenText(s.opts.ConfigError)), nil
	}
	var args struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(rawArgs(req), &args); err != nil {
		return errorResult("call_tool: arguments must be an object {name, arguments}: %v", err), nil
	}
	if args.Name == "" {
		return errorResult("call_tool: name is required: the exact name of a tool that tool_search returned"), nil
	}
	switch a := strings.TrimSpace(string(args.Arguments)); {
	case a == "" || a == "null":
		args.Arguments = nil
	case a[0] != '{':
		return errorResult("call_tool: arguments for %s must be a JSON object, got %s", args.Name, cut(a, 80)), nil
	}
	sess := s.sessionFrom(ctx)
	// The model request this call came from, counted once the tool is known (a call that
	// starts resolves the session's open search, in the order the calls start).
	carried := s.listing(ctx, sess)
	counted := false
	defer func() {
		if !counted {
			s.opts.Stats.Calling(sess.id, sess.clientName(), stats.Tool{Exposed: args.Name}, carried)
		}
	}()
	ctx = identity.NewContext(ctx, sess.who()) // see asOwner
	ctx, span := trace.Start(s.traced(ctx, req), "tools/call "+args.Name, attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", args.Name))
	rec := audit.Record{Tool: args.Name, ArgumentBytes: len(args.Arguments), Outcome: audit.Failed}
	defer s.called(ctx, span, sess, &rec, time.Now(), args.Arguments)
	cat := s.ups.Catalog()
	t, ok := cat.Lookup(args.Name)
	var pending []string
	if !ok {
		// The catalog may still be filling: wait for servers on their first attempt.
		pending = s.awaitStartup(ctx)
		cat = s.ups.Catalog()
		t, ok = cat.Lookup(args.Name)
	}
	if server, known := s.ups.ServerOf(args.Name); !ok && known && s.mayKnow(sess, server) {
		// A server signed in to per user may have no known tools until someone signs in:
		// the caller is to sign in, or, signed in, has them learned.
		if s.ups.NeedsSignIn(ctx, sess.who(), server) {
			rec.Outcome, rec.Server = audit.SignIn, server
			return s.signInResult(ctx, sess, server), nil
		}
		if s.learn(ctx, sess, server) {
			cat = s.ups.Catalog()
			t, ok = cat.Lookup(args.Name)
		}
	}
	if !ok || !t.Admits(sess.who()) {
		rec.Outcome = audit.Unknown
		return s.unknownTool(ctx, sess, args.Name, pending), nil
	}
	rec.Server = t.Server
	s.opts.Stats.Calling(sess.id, sess.clientName(), stats.Tool{Exposed: t.Exposed, Server: t.Server, Name: t.Name}, carried)
	counted = true
	// Announce before calling upstream, and flush before returning: a notification sent as
	// a call's handler ends can be lost over streamable HTTP.
	var announced bool
	if !stable(ctx) && !s.fitsAll(s.views.of(cat)) {
		added, dropped := s.unlock(sess, cat, []upstream.Tool{t}, s.opts.MaxUnlocked)
		announced = len(added) > 0 || len(dropped) > 0
		if announced {
			s.persist(ctx, sess)
		}
	}
	if announced {
		s.announce(ctx, sess, false, "call")
	}
	var token any
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	forwarded := sess.forwarded.Load()
	progress := func(params json.RawMessage) {
		var m map[string]any
		if json.Unmarshal(params, &m) != nil {
			return
		}
		// This request's token: a 2026-07-28 call's later rounds are requests of their own.
		m["progressToken"] = token
		// Through the calling request's session, so that progress reaches the caller on
		// every transport.
		if sess.conn.Notify(ctx, string(mcp.MethodNotificationProgress), m) == nil {
			sess.forwarded.Add(1)
		}
	}
	if !sess.enterCall(s.opts.MaxCalls) {
		rec.Outcome = audit.Refused
		s.log.Warn("tool call refused", "session", sess.id, "tool", t.Exposed, "upstream", t.Server, "max_calls", s.opts.MaxCalls)
		return errorResult("too many calls in flight in this session: %d, the limit (maxCalls in toolsift's config). Wait for one to finish, then call %s again.", s.opts.MaxCalls, t.Exposed), nil
	}
	defer sess.leaveCall()
	start := time.Now()
	var raw json.RawMessage
	var err error
	if stable(ctx) {
		var notify func(json.RawMessage)
		if token != nil {
			notify = progress
		}
		out, asks, berr := s.bridge.run(ctx, sess.who(), "tools/call "+t.Exposed, req.Params.MultiRoundTripParams, notify, func(ctx context.Context) (any, error) {
			return s.ups.Call(ctx, t.Exposed, args.Arguments, token, roundTripOf(ctx).progress)
		})
		if asks != nil {
			rec.Outcome = audit.Input
			return &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired}, MultiRoundTripResult: *asks}, nil
		}
		if errors.Is(berr, errBusy) {
			rec.Outcome = audit.Refused
			return errorResult("too many calls in flight for you: %d, the limit (maxCalls in toolsift's config). Wait for one to finish, then call %s again.", s.opts.MaxCalls, t.Exposed), nil
		}
		if mcp.IsMissingRequiredClientCapability(berr) || errors.Is(berr, mcp.ErrInvalidParams) {
			return nil, berr // a protocol error, with its own code
		}
		raw, _ = out.(json.RawMessage)
		err = berr
	} else {
		raw, err = s.ups.Call(ctx, t.Exposed, args.Arguments, token, progress)
	}
	if announced || sess.forwarded.Load() != forwarded {
		// A notification sent as a call's handler ends can be lost over streamable HTTP,
		// and must precede the result over stdio. (Another call of the session may have
		// forwarded one: a flush too many only waits a little.)
		sess.conn.Flush(ctx)
	}
	log := s.log.With("session", sess.id, "tool", t.Exposed, "upstream", t.Server, "duration_ms", time.Since(start).Milliseconds())
	if server, ok := upstream.PerUserSignIn(err); ok {
		log.Info("tool call needs the user's sign-in")
		rec.Outcome = audit.SignIn
		return s.signInResult(ctx, sess, server), nil
	}
	if err != nil {
		log.Warn("tool call failed", "error", err)
		if errors.Is(err, context.Canceled) {
			rec.Outcome = audit.Canceled
			return nil, err
		}
		return errorResult("%v (details in toolsift's log). The server's other tools and the other servers are unaffected; try again later or use another tool.", err), nil
	}
	// Characters that show as nothing, yet reach the model: text the user never sees.
	raw, hidden := stripTags(raw)
	if hidden > 0 {
		log.Warn("hidden characters removed from a tool result: Unicode tags, which show as nothing but reach the model", "removed", hidden)
	}
	res, err := passthroughResult(raw)
	if err != nil {
		log.Warn("tool call failed", "error", err)
		return errorResult("upstream %q: %v", t.Server, err), nil
	}
	log.Info("tool call", "is_error", res.IsError)
	rec.Outcome = audit.OK
	if res.IsError {
		rec.Outcome = audit.ToolError
	}
	return res, nil
}

// called records a call that started at start with the given arguments, and ended as rec
// says: its span ends, the metrics and the stats count it, and the audit log, if there is
// one, gets rec.
func (s *Server) called(ctx context.Context, span oteltrace.Span, sess *session, rec *audit.Record, start time.Time, args json.RawMessage) {
	span.SetAttributes(attribute.String("toolsift.upstream", rec.Server), attribute.String("toolsift.outcome", rec.Outcome))
	span.End()
	s.opts.Metrics.Called(rec.Server, rec.Outcome, time.Since(start))
	s.opts.Stats.Called(rec.Server, rec.Outcome)
	if s.opts.Audit == nil {
		return
	}
	rec.Trace = trace.ID(ctx)
	u := sess.who()
	sess.mu.Lock()
	rec.Client = sess.client
	sess.mu.Unlock()
	rec.Time, rec.Session, rec.User, rec.Auth = start.UTC(), sess.id, u.Name, u.Kind.String()
	rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if s.opts.Audit.Arguments && len(args) > 0 {
		masked := args
		if s.opts.Redactor != nil {
			masked = json.RawMessage(s.opts.Redactor.String(string(args)))
		}
		if !json.Valid(masked) {
			masked, _ = json.Marshal(string(masked))
		}
		rec.Arguments = masked
	}
	if err := s.opts.Audit.Write(*rec); err != nil {
		s.log.Error("audit log not written", "error", err)
	}
}

// unknownTool explains why a name is not callable.
func (s *Server) unknownTool(ctx context.Context, sess *session, name string, pending []string) *mcp.CallToolResult {
	if h, ok := s.ups.Catalog().HeldTool(name); ok && (sess.admits() == nil || sess.admits()(&h.Tool)) {
		return errorResult("tool %q is held for the user's review: %s. It cannot be called until the user approves it: tell them to run toolsift review.", name, h.Why)
	}
	if admits := sess.admits(); admits != nil {
		// What the caller may not use does not exist for them: no word of a server's state,
		// its deny list, or a tool they lost.
		msg := fmt.Sprintf("unknown tool %q. Use tool_search to find the right name.", name)
		if near := s.nearest(ctx, name, admits); len(near) > 0 {
			msg += fmt.Sprintf(" Closest: %s.", strings.Join(near, ", "))
		}
		return errorResult("%s", msg)
	}
	if srv, denied := s.ups.Denied(name); denied {
		return errorResult("tool %q of server %q is denied by toolsift's configuration (allow/deny lists).", name, srv)
	}
	sess.mu.Lock()
	_, vanished := sess.used[name]
	sess.mu.Unlock()
	if vanished {
		return errorResult("tool %q is gone: its server no longer offers it (its tool list changed since you found it). Use tool_search to find what it offers now.", name)
	}
	msg := fmt.Sprintf("unknown tool %q: no connected server offers it. Use tool_search to find the right name.", name)
	if st, ok := s.statusOf(name); ok && st.State.Usable() {
		msg = fmt.Sprintf("unknown tool %q: server %q offers no such tool. Use tool_search to find the right name.", name, st.Name)
	} else if ok {
		msg = fmt.Sprintf("tool %q cannot be called: server %s.", name, unavailableReason(st))
	}
	if near := s.nearest(ctx, name, nil); len(near) > 0 {
		msg += fmt.Sprintf(" Closest: %s.", strings.Join(near, ", "))
	}
	if len(pending) > 0 {
		msg += fmt.Sprintf(" Servers still starting: %s.", strings.Join(pending, ", "))
	}
	return errorResult("%s", msg)
}

// statusOf returns the status of the configured server whose prefix the exposed name has.
func (s *Server) statusOf(name string) (upstream.Status, bool) {
	srv, ok := s.ups.ServerOf(name)
	if !ok {
		return upstream.Status{}, false
	}
	for _, st := range s.ups.Statuses() {
		if st.Name == srv {
			return st, true
		}
	}
	return upstream.Status{}, false
}

// heldLines says, per server, which of its tools (of those admits admits, if set) are held
// for the user's review (package pin), and what the user runs to see them.
func heldLines(cat *upstream.Catalog, admits func(*upstream.Tool) bool) []string {
	var servers []string
	names := map[string][]string{}
	for i := range cat.Held {
		t := &cat.Held[i].Tool
		if admits != nil && !admits(t) {
			continue
		}
		if _, ok := names[t.Server]; !ok {
			servers = append(servers, t.Server)
		}
		names[t.Server] = append(names[t.Server], t.Exposed)
	}
	lines := make([]string, len(servers))
	for i, srv := range servers {
		held := names[srv]
		list := strings.Join(held[:min(len(held), 5)], ", ")
		if len(held) > 5 {
			list += fmt.Sprintf(" and %d more", len(held)-5)
		}
		what := "1 tool is"
		if len(held) > 1 {
			what = fmt.Sprintf("%d tools are", len(held))
		}
		lines[i] = fmt.Sprintf("%s: %s held for the user's review, because a definition changed or looks poisoned (%s); not callable until the user approves it with toolsift review",
			srv, what, list)
	}
	return lines
}

// unavailableReason says why a server cannot be used, with its one fix, as NAME (STATE):
// what to do, or its last error.
func unavailableReason(st upstream.Status) string {
	why := fmt.Sprintf("%s (%s)", st.Name, st.State)
	switch {
	case st.State == upstream.StateNeedsLogin:
		why += ": the user must run toolsift auth login " + st.Name
	case st.State == upstream.StateDisabled:
		why += ": disabled in toolsift's configuration (disabled: true)"
	case st.State == upstream.StateStarting:
		why += ": still starting, call again in a few seconds"
	case st.Err != nil:
		line, _, _ := strings.Cut(st.Err.Error(), "\n")
		why += ": " + cut(line, 300)
	}
	return why
}

// nearest returns the few tools a tool_search for the words of name would find: what a
// mistyped or half-remembered name most likely meant; of those admits admits, if set.
func (s *Server) nearest(ctx context.Context, name string, admits func(*upstream.Tool) bool) []string {
	words := strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == '/' }), " ")
	q, err := search.ParseQuery(words)
	if err != nil || len(q.Select) > 0 || q.Group != "" {
		return nil
	}
	found, err := s.finder.Find(ctx, finder.Request{Query: q, Text: name, Limit: 3, Admits: admits})
	if err != nil {
		return nil
	}
	return found.Names()
}

func rawArgs(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments != nil {
		b, _ := json.Marshal(req.Params.Arguments)
		return b
	}
	return json.RawMessage("{}")
}

func schemaOrEmpty(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return s
}

// encodeJSON encodes v as a result's text: <, > and & as they are, which encoding/json
// would escape for HTML, to keep URLs in descriptions legible.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// traced returns ctx with the trace context of the request's _meta, if it has one (over
// HTTP, the gate took the headers').
func (s *Server) traced(ctx context.Context, req mcp.CallToolRequest) context.Context {
	if m := req.Params.Meta; m != nil {
		return trace.FromMeta(ctx, m.AdditionalFields)
	}
	return ctx
}
