package clients

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// consent is what a project file's client recorded about running that project's servers.
// A repo's files are not the user's: a cloned repo can name any command in .cursor/mcp.json
// or opencode.json. So a project's server is imported disabled unless the client's own
// record says the user approved it (Claude Code's approvals of .mcp.json servers) or
// trusts the project's folder (Gemini CLI's trusted folders, Codex's trusted projects,
// Copilot CLI's trusted folders). A client that keeps no record toolsift can read (Cursor
// and VS Code keep theirs in their state databases; opencode asks nothing) gives no
// consent. The user's own files, and a file the user named, are theirs: consent is not
// asked of them, but a server the client disabled stays disabled either way.
type consent struct {
	kind Kind
	// claude is Claude Code's per-server record, for .mcp.json.
	claude *claudeApprovals
	// trusted says the client trusts the project folder; record names where it says so.
	trusted bool
	record  string
}

// readConsent reads the client's record for src's project; nil for a user-level file.
func readConsent(src Source, opts Options) *consent {
	if src.Project == "" {
		return nil
	}
	c := &consent{kind: src.Kind}
	project, err := filepath.Abs(src.Project)
	if err != nil {
		project = filepath.Clean(src.Project)
	}
	switch {
	case filepath.Base(src.Path) == ".mcp.json":
		// Copilot CLI reads the workspace's .mcp.json too; Claude Code's approvals are
		// the only per-server record of it.
		a := readClaudeApprovals(opts.Home, project, opts.State)
		c.claude = &a
	case src.Kind == Gemini:
		c.record = geminiTrustFile(opts.Home)
		c.trusted = geminiTrusts(c.record, project)
	case src.Kind == Codex:
		c.record = filepath.Join(codexHome(opts.Home), "config.toml")
		c.trusted = codexTrusts(c.record, project)
	case src.Kind == Copilot:
		c.record = userFile(Copilot, opts.Home, ".copilot/config.json")
		c.trusted = copilotTrusts(c.record, project)
	}
	return c
}

// apply disables s unless the client approved it; named says the user named the file.
func (c *consent) apply(s *Server, named bool) {
	if c == nil {
		return
	}
	if c.claude != nil {
		c.claude.apply(s, named)
		return
	}
	if named || c.trusted || s.Disabled {
		return
	}
	s.Disabled = true
	s.note("%s", c.why())
}

// why says why a project's server came disabled and how to enable it.
func (c *consent) why() string {
	const enable = "kept with disabled: true; set disabled: false once you trust it, or import the file by name (toolsift import FILE)"
	switch c.kind {
	case Gemini:
		return "this folder is not trusted in Gemini CLI (" + c.record + "): " + enable
	case Codex:
		return "this project is not trusted in Codex (trust_level = \"trusted\" under [projects] in " + c.record + "): " + enable
	case Copilot:
		return "this folder is not trusted in Copilot CLI (trusted_folders in " + c.record + "): " + enable
	}
	return "a project's server, and " + c.kind.Title() + " keeps no approval of it that toolsift can read: " + enable
}

// readJSONFile parses a JSON (or JSONC) file; nil if it cannot be read.
func readJSONFile(path string) *jnode {
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

// within says dir is root or below it.
func within(dir, root string) bool {
	rel, err := filepath.Rel(filepath.Clean(root), dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// geminiTrustFile is Gemini CLI's trusted-folders file.
func geminiTrustFile(home string) string {
	if p := os.Getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH"); p != "" {
		return p
	}
	return filepath.Join(home, ".gemini", "trustedFolders.json")
}

// geminiTrusts applies Gemini CLI's rules: TRUST_FOLDER trusts a folder and what is below
// it, TRUST_PARENT its parent and what is below that, DO_NOT_TRUST the folder itself wins.
func geminiTrusts(file, project string) bool {
	root := readJSONFile(file)
	if root == nil || root.kind != jObject {
		return false
	}
	trusted := false
	for _, m := range root.members {
		if m.value == nil || m.value.kind != jString || !filepath.IsAbs(m.key) {
			continue
		}
		switch m.value.text {
		case "DO_NOT_TRUST":
			if filepath.Clean(m.key) == project {
				return false
			}
		case "TRUST_FOLDER":
			trusted = trusted || within(project, m.key)
		case "TRUST_PARENT":
			trusted = trusted || within(project, filepath.Dir(filepath.Clean(m.key)))
		}
	}
	return trusted
}

// codexHome is Codex's folder: $CODEX_HOME, else ~/.codex.
func codexHome(home string) string {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(home, ".codex")
}

// codexTrusts says Codex's config marks project trusted: Codex loads a project's
// .codex/config.toml only then.
func codexTrusts(file, project string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	d, err := parseTOML(file, data)
	if err != nil {
		return false
	}
	projects, _ := d.tree["projects"].(map[string]any)
	for dir, v := range projects {
		entry, _ := v.(map[string]any)
		if level, _ := entry["trust_level"].(string); level == "trusted" && filepath.IsAbs(dir) && filepath.Clean(dir) == project {
			return true
		}
	}
	return false
}

// copilotTrusts says Copilot CLI trusts project: a trusted folder covers what is below it.
// Its config has spelt the list trusted_folders and trustedFolders.
func copilotTrusts(file, project string) bool {
	root := readJSONFile(file)
	if root == nil || root.kind != jObject {
		return false
	}
	for _, key := range []string{"trusted_folders", "trustedFolders"} {
		if list := root.get(key); list != nil {
			for _, e := range list.elems {
				if e.kind == jString && filepath.IsAbs(e.text) && within(project, e.text) {
					return true
				}
			}
		}
	}
	return false
}

// claudeApprovals is what Claude Code recorded about a project's .mcp.json servers: a
// server there runs only once the user approved it, and not at all once they disabled it.
type claudeApprovals struct {
	all               bool // enableAllProjectMcpServers
	enabled, disabled []string
}

// readClaudeApprovals gathers the approvals of project's .mcp.json servers from every place
// Claude Code keeps them: the project's entry in ~/.claude.json, and the user's, the
// project's and the project's local settings files. A file that cannot be read adds
// nothing; a disabled server stays disabled whatever else approves it, but for those
// toolsift's setup disabled itself (its record in state), which it serves there: that was
// setup's doing, not the user's choice.
func readClaudeApprovals(home, project, state string) claudeApprovals {
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
	if home != "" {
		if r := readJSONFile(filepath.Join(home, ".claude.json")); r != nil {
			if projects := r.get("projects"); projects != nil {
				take(projects.get(project))
			}
		}
		take(readJSONFile(filepath.Join(home, ".claude", "settings.json")))
	}
	take(readJSONFile(filepath.Join(project, ".claude", "settings.json")))
	take(readJSONFile(filepath.Join(project, ".claude", "settings.local.json")))
	if state != "" {
		if rec, err := readHandover(stateDir(state, SettingsFile(project))); err == nil {
			a.disabled = slices.DeleteFunc(a.disabled, func(n string) bool { return slices.Contains(rec.Added, n) })
		}
	}
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
