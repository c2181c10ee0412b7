package proxy

import (
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/upstream"
)

// view is one catalog version as clients are shown it. Every session lists and finds tools
// through the view of the catalog at hand, so each tool's exposed definition is made and
// encoded once per catalog version, on first use, however many sessions list it.
//
// A view is immutable but for its cache of forms, which is safe for concurrent use.
type view struct {
	cat *upstream.Catalog // fixed at creation
	// always holds the exposed names of the always-load tools, in catalog order.
	always []string
	// forms caches the form of each tool by exposed name (a *form), filled on first use:
	// at 50,000 tools, encoding all of them would cost more than any session ever lists.
	forms sync.Map
	// fits caches fitsAll's answer (see Server.fitsAll): 0 unknown, 1 no, 2 yes.
	fits atomic.Int32
}

// form is one tool as clients see it: the definition exposedTool makes for tools/list, and
// its tool_search match.
type form struct {
	always bool // the tool is always-load
	tool   mcp.Tool
	match  Match
	src    upstream.Tool // as the catalog has it; zero for the meta-tools

	rawOnce sync.Once
	rawJSON json.RawMessage
}

// raw is the tool's definition encoded, once per catalog, as mcp-go encodes it: the stdio
// transport writes a session's tools/list from these (see appendList), and its size tells
// whether all tools fit (fitsAll).
func (f *form) raw() json.RawMessage {
	f.rawOnce.Do(func() { f.rawJSON, _ = json.Marshal(f.tool) })
	return f.rawJSON
}

// newView makes the view of cat.
func newView(cat *upstream.Catalog) *view {
	v := &view{cat: cat}
	for _, t := range cat.Tools {
		if t.AlwaysLoad {
			v.always = append(v.always, t.Exposed)
		}
	}
	return v
}

// form returns the form of the tool with the given exposed name, and whether the catalog
// has it.
func (v *view) form(name string) (*form, bool) {
	if f, ok := v.forms.Load(name); ok {
		return f.(*form), true
	}
	t, ok := v.cat.Lookup(name)
	if !ok {
		return nil, false
	}
	return v.formOf(t), true
}

// formOf returns the form of t, a tool of the view's catalog.
func (v *view) formOf(t upstream.Tool) *form {
	if f, ok := v.forms.Load(t.Exposed); ok {
		return f.(*form)
	}
	f, _ := v.forms.LoadOrStore(t.Exposed, newForm(t))
	return f.(*form)
}

// newForm makes the form of a tool.
func newForm(t upstream.Tool) *form {
	return &form{always: t.AlwaysLoad, tool: exposedTool(t), src: t, match: Match{
		Name: t.Exposed, Server: t.Server,
		Description: firstParagraph(t.Description, 1024),
		InputSchema: schemaOrEmpty(t.InputSchema),
	}}
}

// alwaysForms returns the forms of the always-load tools.
func (v *view) alwaysForms() []*form {
	forms := make([]*form, 0, len(v.always))
	for _, name := range v.always {
		f, _ := v.form(name)
		forms = append(forms, f)
	}
	return forms
}

// views keeps the view of the latest catalog.
type views struct {
	latest atomic.Pointer[view]
}

// of returns the view of cat: the latest one if it is cat's, else a new one, which becomes
// the latest. Two callers racing with the same new catalog may each make one; either is
// correct, and one is kept.
func (vs *views) of(cat *upstream.Catalog) *view {
	cur := vs.latest.Load()
	if cur != nil && cur.cat == cat {
		return cur
	}
	v := newView(cat)
	if vs.latest.CompareAndSwap(cur, v) {
		return v
	}
	if now := vs.latest.Load(); now.cat == cat {
		return now
	}
	return v
}

// view returns the view of the current catalog.
func (s *Server) view() *view { return s.views.of(s.ups.Catalog()) }

// metaTools caches the forms of tool_search and call_tool. tool_search's description lists
// the servers (see searchToolDef), so its form is remade only when what that list shows of
// them changed.
type metaTools struct {
	broken   string     // Options.ConfigError; fixed at creation
	mu       sync.Mutex // guards statuses and search
	statuses []upstream.Status
	search   *form
	call     *form
}

// shown is what searchToolDef shows of a server.
func shown(st upstream.Status) upstream.Status {
	return upstream.Status{Name: st.Name, State: st.State, Tools: st.Tools, Summary: st.Summary}
}

// forms returns the forms of tool_search, for the given statuses, and call_tool.
func (m *metaTools) forms(statuses []upstream.Status) (search, call *form) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.search == nil || !slices.EqualFunc(m.statuses, statuses, func(a, b upstream.Status) bool { return a == shown(b) }) {
		m.statuses = m.statuses[:0]
		for _, st := range statuses {
			m.statuses = append(m.statuses, shown(st))
		}
		m.search = metaForm(searchToolDef(statuses, m.broken))
	}
	if m.call == nil {
		m.call = metaForm(callToolDef())
	}
	return m.search, m.call
}

func metaForm(t mcp.Tool) *form { return &form{tool: t} }
