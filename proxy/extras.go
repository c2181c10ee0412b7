package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/upstream"
)

// CatalogChanged is called after the upstream catalog changed. It registers the upstreams'
// prompts, resources and resource templates with the MCP server (they are the same for every
// session, so mcp-go's own registry, and its list_changed to every session, fit them), and
// tells the sessions whose tool list changed.
func (s *Server) CatalogChanged() {
	s.syncExtras()
	s.announceChanges()
}

// announceChanges sends list_changed to each session whose tools/list is no longer what it
// was: an always-load tool or tool_search's directory of servers changed (every session), or
// a tool the session unlocked changed or vanished. Other sessions are not disturbed.
func (s *Server) announceChanges() {
	cat := s.ups.Catalog()
	directory := searchToolDef(s.ups.Statuses()).Description
	s.mu.Lock()
	prev, prevDir := s.shown, s.shownDirectory
	s.shown, s.shownDirectory = cat, directory
	sessions := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.mu.Unlock()
	changed := func(name string) bool {
		a, okA := prev.Lookup(name)
		b, okB := cat.Lookup(name)
		return okA != okB || okA && !sameTool(a, b)
	}
	everyone := directory != prevDir
	for _, t := range append(slices.Clone(prev.Tools), cat.Tools...) {
		if t.AlwaysLoad && changed(t.Exposed) {
			everyone = true
			break
		}
	}
	for _, sess := range sessions {
		notify := everyone
		if !notify {
			sess.mu.Lock()
			notify = slices.ContainsFunc(sess.unlocked, changed)
			sess.mu.Unlock()
		}
		if notify && sess.id != "" {
			if err := s.mcp.SendNotificationToSpecificClient(sess.id, string(mcp.MethodNotificationToolsListChanged), nil); err != nil {
				s.log.Debug("list_changed not sent", "session", sess.id, "error", err)
			}
		}
	}
}

// sameTool reports whether two versions of a tool would be listed the same.
func sameTool(a, b upstream.Tool) bool {
	return a.Title == b.Title && a.Description == b.Description && a.AlwaysLoad == b.AlwaysLoad &&
		bytes.Equal(a.InputSchema, b.InputSchema) && bytes.Equal(a.OutputSchema, b.OutputSchema) &&
		bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Meta, b.Meta) &&
		bytes.Equal(a.Icons, b.Icons) && bytes.Equal(a.Execution, b.Execution)
}

func (s *Server) syncExtras() {
	cat := s.ups.Catalog()
	keys := extrasKeys(cat)
	s.extrasMu.Lock()
	defer s.extrasMu.Unlock()
	if keys == s.extrasKeys {
		// Most catalog changes are a server connecting with what it had, or another
		// server's tools.
		return
	}
	var prompts []server.ServerPrompt
	for _, p := range cat.Prompts {
		var mp mcp.Prompt
		if err := json.Unmarshal(p.Raw, &mp); err != nil {
			s.log.Warn("upstream prompt skipped", "upstream", p.Server, "prompt", p.Name, "error", err)
			continue
		}
		mp.Name = p.Exposed
		prompts = append(prompts, server.ServerPrompt{Prompt: mp, Handler: s.getPrompt(p)})
	}
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	seen := map[string]string{}
	for _, r := range cat.Resources {
		if other, dup := seen[r.URI]; dup {
			s.log.Warn("upstream resource hidden: another server has its URI", "upstream", r.Server, "uri", r.URI, "other", other)
			continue
		}
		seen[r.URI] = r.Server
		if r.Template {
			var t mcp.ResourceTemplate
			if err := json.Unmarshal(r.Raw, &t); err != nil {
				s.log.Warn("upstream resource template skipped", "upstream", r.Server, "uri", r.URI, "error", err)
				continue
			}
			templates = append(templates, server.ServerResourceTemplate{Template: t, Handler: server.ResourceTemplateHandlerFunc(s.readResource(r.Server))})
			continue
		}
		var res mcp.Resource
		if err := json.Unmarshal(r.Raw, &res); err != nil {
			s.log.Warn("upstream resource skipped", "upstream", r.Server, "uri", r.URI, "error", err)
			continue
		}
		resources = append(resources, server.ServerResource{Resource: res, Handler: s.readResource(r.Server)})
	}
	// Each Set tells every session its list changed: only when it did, so that a server
	// that reconnects with what it had does not disturb anyone.
	if keys[0] != s.extrasKeys[0] {
		s.mcp.SetPrompts(prompts...)
	}
	if keys[1] != s.extrasKeys[1] {
		s.mcp.SetResources(resources...)
	}
	if keys[2] != s.extrasKeys[2] {
		s.mcp.SetResourceTemplates(templates...)
	}
	s.extrasKeys = keys
}

// extrasKeys sums up what clients are shown of the catalog's prompts, resources and resource
// templates: the same key, the same list.
func extrasKeys(cat *upstream.Catalog) [3]string {
	hs := [3]hash.Hash{sha256.New(), sha256.New(), sha256.New()}
	for _, p := range cat.Prompts {
		fmt.Fprintf(hs[0], "%s\x00%s\x00%s\x00", p.Server, p.Exposed, p.Raw)
	}
	for _, r := range cat.Resources {
		h := hs[1]
		if r.Template {
			h = hs[2]
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", r.Server, r.URI, r.Raw)
	}
	var keys [3]string
	for i, h := range hs {
		keys[i] = string(h.Sum(nil))
	}
	return keys
}

// getPrompt forwards prompts/get to the prompt's server under its own name.
func (s *Server) getPrompt(p upstream.Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		params := map[string]any{"name": p.Name}
		if req.Params.Arguments != nil {
			params["arguments"] = req.Params.Arguments
		}
		raw, err := s.ups.Request(ctx, p.Server, "prompts/get", params)
		if err != nil {
			return nil, err
		}
		return mcp.ParseGetPromptResult(&raw)
	}
}

// readResource forwards resources/read to the server that listed the resource or template.
func (s *Server) readResource(serverName string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		raw, err := s.ups.Request(ctx, serverName, "resources/read", map[string]any{"uri": req.Params.URI})
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: resources/read: %w", serverName, err)
		}
		return res.Contents, nil
	}
}

// completer forwards completion/complete to the server of the prompt or template.
type completer struct{ s *Server }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, p := range c.s.ups.Catalog().Prompts {
		if p.Exposed == name {
			return c.complete(ctx, p.Server, map[string]any{"type": "ref/prompt", "name": p.Name}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, r := range c.s.ups.Catalog().Resources {
		if r.URI == uri {
			return c.complete(ctx, r.Server, map[string]any{"type": "ref/resource", "uri": uri}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) complete(ctx context.Context, serverName string, ref map[string]any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	params := map[string]any{"ref": ref, "argument": arg}
	if len(cctx.Arguments) > 0 {
		params["context"] = cctx
	}
	raw, err := c.s.ups.Request(ctx, serverName, "completion/complete", params)
	if err != nil {
		return nil, err
	}
	var res struct {
		Completion mcp.Completion `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("upstream %q: completion/complete: %w", serverName, err)
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return &res.Completion, nil
}

// CreateMessage asks the client of the caller's session to sample its LLM, for an upstream
// server serving that caller (upstream.Client).
func (s *Server) CreateMessage(caller context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return s.mcp.RequestSampling(caller, req)
}

// Elicit asks the user of the caller's session for input, for an upstream server serving
// that caller (upstream.Client).
func (s *Server) Elicit(caller context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return s.mcp.RequestElicitation(caller, req)
}

// ListRoots asks the client of the caller's session for its roots, for an upstream server
// serving that caller (upstream.Client).
func (s *Server) ListRoots(caller context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return s.mcp.RequestRoots(caller, req)
}

// Log passes an upstream server's log message to the caller's session, subject to the level
// that session set (upstream.Client).
func (s *Server) Log(caller context.Context, params json.RawMessage) {
	var n mcp.LoggingMessageNotification
	if err := json.Unmarshal(params, &n.Params); err != nil {
		return
	}
	n.Method = string(mcp.MethodNotificationMessage)
	if s.mcp.SendLogMessageToClient(caller, n) == nil {
		countForward(caller)
	}
}

var _ upstream.Client = (*Server)(nil)

// subscribe records sess's subscription to uri and subscribes upstream on the first one.
func (s *Server) subscribe(ctx context.Context, sess *session, uri string) {
	sess.mu.Lock()
	already := sess.subs[uri]
	sess.subs[uri] = true
	sess.mu.Unlock()
	if already {
		return
	}
	s.mu.Lock()
	s.subscribers[uri]++
	first := s.subscribers[uri] == 1
	s.mu.Unlock()
	if first {
		s.forwardSubscription(ctx, "resources/subscribe", uri)
	}
}

// unsubscribe drops sess's subscription to uri and unsubscribes upstream after the last.
func (s *Server) unsubscribe(ctx context.Context, sess *session, uri string) {
	sess.mu.Lock()
	had := sess.subs[uri]
	delete(sess.subs, uri)
	sess.mu.Unlock()
	if !had {
		return
	}
	s.mu.Lock()
	s.subscribers[uri]--
	last := s.subscribers[uri] <= 0
	if last {
		delete(s.subscribers, uri)
	}
	s.mu.Unlock()
	if last {
		s.forwardSubscription(ctx, "resources/unsubscribe", uri)
	}
}

// forwardSubscription sends a subscribe or unsubscribe to the server that owns uri, directly
// or through one of its templates.
func (s *Server) forwardSubscription(ctx context.Context, method, uri string) {
	owner := ""
	for _, r := range s.ups.Catalog().Resources {
		if r.URI == uri || r.Template && matchesTemplate(r.URI, uri) {
			owner = r.Server
			break
		}
	}
	if owner == "" {
		s.log.Warn("resource subscription not forwarded: no server lists it", "uri", uri)
		return
	}
	if _, err := s.ups.Request(context.WithoutCancel(ctx), owner, method, map[string]string{"uri": uri}); err != nil {
		s.log.Warn("resource subscription not forwarded", "upstream", owner, "method", method, "uri", uri, "error", err)
	}
}

// matchesTemplate reports whether uri fits an RFC 6570 level-1 template: literal text must
// match, and each {variable} stands for one or more characters other than "/".
func matchesTemplate(template, uri string) bool {
	var b strings.Builder
	b.WriteString("^")
	for {
		open := strings.IndexByte(template, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(template))
			break
		}
		end := strings.IndexByte(template[open:], '}')
		if end < 0 {
			return false
		}
		b.WriteString(regexp.QuoteMeta(template[:open]))
		b.WriteString(`[^/]+`)
		template = template[open+end+1:]
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(uri)
}

// ResourceUpdated passes an upstream's notifications/resources/updated to every session
// subscribed to the resource (upstream.Client).
func (s *Server) ResourceUpdated(params json.RawMessage) {
	var p map[string]any
	if json.Unmarshal(params, &p) != nil {
		return
	}
	uri, _ := p["uri"].(string)
	s.mu.Lock()
	var ids []string
	for id, sess := range s.sessions {
		sess.mu.Lock()
		if sess.subs[uri] {
			ids = append(ids, id)
		}
		sess.mu.Unlock()
	}
	s.mu.Unlock()
	for _, id := range ids {
		if err := s.mcp.SendNotificationToSpecificClient(id, string(mcp.MethodNotificationResourceUpdated), p); err != nil {
			s.log.Debug("resource update not delivered", "session", id, "uri", uri, "error", err)
		}
	}
}
