package proxy

import (
	"github.com/toolsift/toolsift/stats"

	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/upstream"
)

// CatalogChanged is called after the upstream catalog changed. It registers the upstreams'
// prompts, resources and resource templates with the MCP server (they are the same for every
// session, so mcp-go's own registry, and its list_changed to every session, fit them), and
// tells the sessions whose tool list changed; the search index of the new catalog is built
// aside, and the embeddings engine, if any, is told too.
func (s *Server) CatalogChanged() {
	s.finder.Changed()
	s.syncPromptsAndResources()
	s.announceChanges()
	if s.opts.Stats != nil {
		v := s.view()
		s.opts.Stats.Catalog(stats.Listing{Catalog: v.cat, All: func() []stats.Def { return allDefs(v) }})
	}
}

// announceChanges sends list_changed to each session whose tools/list is no longer what it
// was: an always-load tool or tool_search's directory of servers changed (every session), or
// a tool the session unlocked changed or vanished. Other sessions are not disturbed. While
// every tool is listed (fitsAll), any change concerns every session.
//
// Only the always-load tools and the sessions' unlocked ones are compared, each once
// however many sessions unlocked it, not the whole catalog.
func (s *Server) announceChanges() {
	v := s.view()
	search, _ := s.meta.forms(s.ups.Statuses())
	directory := search.tool.Description
	s.shownMu.Lock()
	prev, prevDir := s.shown, s.shownDirectory
	s.shown, s.shownDirectory = v, directory
	s.shownMu.Unlock()
	if prev == v && prevDir == directory {
		return
	}
	prevAll, all := s.fitsAll(prev), s.fitsAll(v)
	memo := map[string]bool{}
	changed := func(name string) bool {
		c, ok := memo[name]
		if !ok {
			a, okA := prev.cat.Lookup(name)
			b, okB := v.cat.Lookup(name)
			c = okA != okB || okA && !sameTool(a, b)
			memo[name] = c
		}
		return c
	}
	// Listed all, every tool concerns everyone; listed lazily, the directory of servers does,
	// and the always-load tools.
	everyone := prevAll != all || !all && directory != prevDir
	if !everyone && all {
		everyone = len(prev.cat.Tools) != len(v.cat.Tools) || slices.ContainsFunc(v.cat.Tools, func(t upstream.Tool) bool { return changed(t.Exposed) })
	}
	if !everyone {
		everyone = slices.ContainsFunc(prev.always, changed) || slices.ContainsFunc(v.always, changed)
	}
	if everyone {
		// Through mcp-go, to every session and to every 2026-07-28 client listening for it
		// (subscriptions/listen), which toolsift holds no record of.
		s.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
		s.log.Debug("list_changed sent", "session", "all", "reason", "catalog")
		return
	}
	s.sessionsMu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, sess := range s.sessions {
		sessions = append(sessions, sess)
	}
	s.sessionsMu.Unlock()
	for _, sess := range sessions {
		sess.mu.Lock()
		notify := slices.ContainsFunc(sess.unlocked, changed)
		sess.mu.Unlock()
		if notify && sess.id != "" {
			if err := sess.conn.Notify(context.Background(), string(mcp.MethodNotificationToolsListChanged), nil); err != nil {
				s.log.Debug("list_changed not sent", "session", sess.id, "reason", "catalog", "error", err)
			} else {
				s.log.Debug("list_changed sent", "session", sess.id, "reason", "catalog")
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

// syncPromptsAndResources registers the catalog's prompts, resources and resource templates
// with mcp-go, if they changed since they were last registered.
func (s *Server) syncPromptsAndResources() {
	cat := s.ups.Catalog()
	keys := promptResourceKeys(cat)
	s.registerMu.Lock()
	defer s.registerMu.Unlock()
	if keys == s.registered {
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
	first := s.registered == [3]string{} // in New, before any session exists
	for i, set := range []func(){
		func() { s.mcp.SetPrompts(prompts...) },
		func() { s.mcp.SetResources(resources...) },
		func() { s.mcp.SetResourceTemplates(templates...) },
	} {
		if keys[i] == s.registered[i] {
			continue
		}
		set()
		if !first {
			s.log.Debug("list_changed sent", "session", "all", "reason", [3]string{"prompts", "resources", "resource templates"}[i])
		}
	}
	s.registered = keys
	s.log.Debug("prompts and resources registered", "prompts", len(prompts), "resources", len(resources), "templates", len(templates))
}

// promptResourceKeys sums up what clients are shown of the catalog's prompts, resources and
// resource templates: the same key, the same list.
func promptResourceKeys(cat *upstream.Catalog) [3]string {
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
