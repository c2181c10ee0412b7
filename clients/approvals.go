package clients

import (
	"os"
	"path/filepath"
	"slices"
)

// claudeApprovals is what Claude Code recorded about a project's .mcp.json servers: a
// server there runs only once the user approved it, and not at all once they disabled it.
// Import honours the same choice: a server Claude Code would not start is imported with
// disabled: true, so that it is kept but toolsift does not start it either.
type claudeApprovals struct {
	all               bool // enableAllProjectMcpServers
	enabled, disabled []string
}

// readClaudeApprovals gathers the approvals of project's .mcp.json servers from every place
// Claude Code keeps them: the project's entry in ~/.claude.json, and the user's, the
// project's and the project's local settings files. A file that cannot be read adds
// nothing; a disabled server stays disabled whatever else approves it.
func readClaudeApprovals(home, project string) claudeApprovals {
	var a claudeApprovals
	take := func(n *jnode) {
		if n == nil || n.kind != jObject {
			return
		}
		if all := n.get("enableAllProjectMcpServers"); all != nil && all.kind == jBool && all.text == "true" {
			a.all = true
		}
		for key, dst := range map[string]*[]string{"enabledMcpjsonServers": &a.enabled, "disabledMcpjsonServers": &a.disabled} {
			if list := n.get(key); list != nil {
				for _, e := range list.elems {
					if e.kind == jString {
						*dst = append(*dst, e.text)
					}
				}
			}
		}
	}
	root := func(path string) *jnode {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		doc, err := parseJSONC(path, data)
		if err != nil {
			return nil
		}
		return doc.root
	}
	if home != "" {
		if r := root(filepath.Join(home, ".claude.json")); r != nil {
			if projects := r.get("projects"); projects != nil {
				take(projects.get(project))
			}
		}
		take(root(filepath.Join(home, ".claude", "settings.json")))
	}
	take(root(filepath.Join(project, ".claude", "settings.json")))
	take(root(filepath.Join(project, ".claude", "settings.local.json")))
	return a
}

func (a claudeApprovals) apply(s *Server, named bool) {
	switch {
	case slices.Contains(a.disabled, s.Key):
		s.Disabled = true
		s.note("disabled in Claude Code for this project (disabledMcpjsonServers): kept with disabled: true")
	case !named && !a.all && !slices.Contains(a.enabled, s.Key):
		s.Disabled = true
		s.note("not approved in Claude Code for this project: kept with disabled: true; set disabled: false once you trust it")
	}
}
