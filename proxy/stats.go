package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/toolsift/toolsift/stats"
)

// listing is what a model request of sess carries: the session's list as it is now,
// against every tool of the catalog listed directly. Empty without Options.Stats.
func (s *Server) listing(ctx context.Context, sess *session) stats.Listing {
	if s.opts.Stats == nil {
		return stats.Listing{}
	}
	v := s.view()
	forms, _ := s.toolsFor(sess, stable(ctx))
	l := stats.Listing{Catalog: v.cat, Listed: make([]stats.Def, len(forms))}
	for i, f := range forms {
		l.Listed[i] = stats.Def{Server: f.src.Server, Raw: f.raw()}
	}
	l.All = func() []stats.Def { return allDefs(v) }
	return l
}

// allDefs is every tool of v's catalog as its server lists it, which is what listing them
// directly would send: the members the server gave, its own name. They are encoded here
// rather than through the view's forms: keeping every tool's form would cost more memory
// than any session's list.
func allDefs(v *view) []stats.Def {
	all := make([]stats.Def, len(v.cat.Tools))
	for i, t := range v.cat.Tools {
		all[i] = stats.Def{Server: t.Server, Raw: encodeJSON(directTool{Name: t.Name, Title: t.Title,
			Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Annotations: t.Annotations, Meta: t.Meta, Icons: t.Icons, Execution: t.Execution})}
	}
	return all
}

// directTool is a tool's members as a server lists them.
type directTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	Meta         json.RawMessage `json:"_meta,omitempty"`
	Icons        json.RawMessage `json:"icons,omitempty"`
	Execution    json.RawMessage `json:"execution,omitempty"`
}

// savings is the line that ends a tool_search result: the tools behind the search, and
// the tokens a direct listing of them would send with each model request beyond what the
// session's list sends. Empty until Stats has counted a catalog.
func (s *Server) savings(ctx context.Context, sess *session) string {
	tools, direct, ok := s.opts.Stats.Direct()
	if !ok {
		return ""
	}
	forms, _ := s.toolsFor(sess, stable(ctx))
	defs := make([]stats.Def, len(forms))
	for i, f := range forms {
		defs[i] = stats.Def{Raw: f.raw()}
	}
	saved := direct - s.opts.Stats.Tokens(defs)
	if saved <= 0 {
		return ""
	}
	return fmt.Sprintf("toolsift: %s tools behind this search, ~%s tokens not sent", thousands(int64(tools)), stats.Short(saved))
}

// clientName is the name the session's client gave.
func (sess *session) clientName() string {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.client
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
