package clients

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// readJSON reads the servers blocks of a JSON client file.
func (f *file) readJSON(opts Options) error {
	doc, err := parseJSONC(f.src.Path, f.data)
	if err != nil {
		return err
	}
	f.json = doc
	root := doc.root
	if root.kind != jObject {
		return f.jsonErr(root, "want a JSON object at the top, got %s", root.kind)
	}
	switch f.src.Kind {
	case ClaudeCode:
		f.blocks = append(f.blocks, &block{path: []string{"mcpServers"}, primary: true})
		if projects := root.get("projects"); projects != nil && projects.kind == jObject {
			f.claudeProjects(projects)
		}
	case VSCode:
		// User settings.json keeps servers under mcp.servers; mcp.json at the top.
		if filepath.Base(f.src.Path) == "settings.json" || root.get("servers") == nil && root.lookup("mcp", "servers") != nil {
			f.blocks = append(f.blocks, &block{path: []string{"mcp", "servers"}, primary: true})
		} else {
			f.blocks = append(f.blocks, &block{path: []string{"servers"}, primary: true})
		}
		f.inputs = map[string]string{}
		inputs := root.get("inputs")
		if inputs == nil {
			inputs = root.lookup("mcp", "inputs")
		}
		if inputs != nil {
			for _, in := range inputs.elems {
				if id := in.get("id"); id != nil && id.kind == jString {
					desc := ""
					if d := in.get("description"); d != nil {
						desc = d.text
					}
					f.inputs[id.text] = desc
				}
			}
		}
	case OpenCode:
		mcp := root.get("mcp")
		// opencode 2 nests servers under mcp.servers; opencode 1 puts them right under mcp,
		// where a server named "servers" would have a type.
		if s := mcp.get("servers"); s != nil && s.kind == jObject && s.get("type") == nil {
			f.blocks = append(f.blocks, &block{path: []string{"mcp", "servers"}, primary: true})
		} else {
			f.blocks = append(f.blocks, &block{path: []string{"mcp"}, primary: true})
		}
	default:
		f.blocks = append(f.blocks, &block{path: []string{"mcpServers"}, primary: true})
	}
	var gem geminiLists
	if f.src.Kind == Gemini {
		gem = readGeminiLists(root)
	}
	for _, b := range f.blocks {
		b.node = root.lookup(b.path...)
		if b.node == nil {
			continue
		}
		if b.node.kind != jObject {
			return f.jsonErr(b.node, "%s: want an object of servers by name, got %s", strings.Join(b.path, "."), b.node.kind)
		}
		for i, m := range b.node.members {
			ref := entryRef{key: m.key, raw: string(f.data[m.keyStart:m.value.end]), span: [2]int{m.keyStart, m.value.end}}
			if later := slices.IndexFunc(b.node.members[i+1:], func(o jmember) bool { return o.key == m.key }); later >= 0 {
				line, _ := lineCol(f.data, m.keyStart)
				f.warn(m.key, b.scope, fmt.Sprintf("named twice in %s (line %d is overridden): %s uses the last one, and so does toolsift",
					strings.Join(b.path, "."), line, f.src.Kind.Title()))
				ref.status = shadowed
				b.entries = append(b.entries, ref)
				continue
			}
			s, st := f.translate(m.key, b.scope, m.value.value(), opts)
			if st == imported && f.src.Kind == Gemini {
				gem.apply(&s)
			}
			ref.status = st
			f.finish(&s, st, &ref)
			b.entries = append(b.entries, ref)
		}
	}
	return nil
}

// jsonErr is a SyntaxError located at n.
func (f *file) jsonErr(n *jnode, format string, args ...any) error {
	line, col := lineCol(f.data, n.start)
	return &SyntaxError{File: f.src.Path, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// claudeProjects adds the local servers of every project: each is a project's own (see
// Server.ProjectDir), which toolsift serves only there.
func (f *file) claudeProjects(projects *jnode) {
	for _, m := range projects.members {
		servers := m.value.get("mcpServers")
		if servers == nil || servers.kind != jObject || len(servers.members) == 0 {
			continue
		}
		f.blocks = append(f.blocks, &block{path: []string{"projects", m.key, "mcpServers"}, scope: "project " + m.key})
	}
}

// geminiLists are Gemini CLI's mcp.allowed and mcp.excluded server lists.
type geminiLists struct{ allowed, excluded []string }

func readGeminiLists(root *jnode) geminiLists {
	var g geminiLists
	for _, l := range []struct {
		key string
		dst *[]string
	}{{"allowed", &g.allowed}, {"excluded", &g.excluded}} {
		if n := root.lookup("mcp", l.key); n != nil {
			for _, e := range n.elems {
				*l.dst = append(*l.dst, e.text)
			}
		}
	}
	return g
}

func (g geminiLists) apply(s *Server) {
	switch {
	case slices.Contains(g.excluded, s.Key):
		s.Disabled = true
		s.note("listed in mcp.excluded: kept with disabled: true")
	case len(g.allowed) > 0 && !slices.Contains(g.allowed, s.Key):
		s.Disabled = true
		s.note("not listed in mcp.allowed: kept with disabled: true")
	}
}
