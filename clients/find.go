package clients

import (
	"os"
	"path/filepath"
	"runtime"
)

// userFiles are each client's user-level files, relative to the home directory. Paths of
// every platform are listed: only the ones that exist are read.
var userFiles = map[Kind][]string{
	ClaudeCode: {".claude.json"},
	ClaudeDesktop: {
		".config/Claude/claude_desktop_config.json",
		"Library/Application Support/Claude/claude_desktop_config.json",
		"AppData/Roaming/Claude/claude_desktop_config.json",
	},
	Cursor: {".cursor/mcp.json"},
	VSCode: {
		".config/Code/User/mcp.json",
		"Library/Application Support/Code/User/mcp.json",
		"AppData/Roaming/Code/User/mcp.json",
		".config/Code/User/settings.json",
		"Library/Application Support/Code/User/settings.json",
		"AppData/Roaming/Code/User/settings.json",
	},
	Gemini:   {".gemini/settings.json"},
	Codex:    {".codex/config.toml"},
	OpenCode: {".config/opencode/opencode.json", ".config/opencode/opencode.jsonc"},
	Copilot:  {".copilot/mcp-config.json"}, // or $COPILOT_HOME/mcp-config.json (see userFile)
}

// projectFiles are each client's project-level files, relative to the project directory.
var projectFiles = map[Kind][]string{
	ClaudeCode: {".mcp.json"},
	Cursor:     {".cursor/mcp.json"},
	VSCode:     {".vscode/mcp.json"},
	Gemini:     {".gemini/settings.json"},
	Codex:      {".codex/config.toml"},
	OpenCode:   {"opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"},
	// Copilot CLI reads the workspace's .mcp.json too, which is read as Claude Code's.
	Copilot: {".github/mcp.json"},
}

// userFile is the path of a user-level file rel of a client: under home, except that
// Copilot CLI keeps its files in $COPILOT_HOME when that is set.
func userFile(kind Kind, home, rel string) string {
	if kind == Copilot {
		if ch := os.Getenv("COPILOT_HOME"); ch != "" {
			return filepath.Join(ch, filepath.Base(rel))
		}
	}
	return filepath.Join(home, filepath.FromSlash(rel))
}

// Find returns the client configuration files that exist for a user whose home is home,
// working in cwd: each client's user-level files, then its project-level files in cwd, and
// the .mcp.json of every project Claude Code knows (the projects of ~/.claude.json). Only
// cwd itself is searched for project files, not its parents. Either directory may be empty
// to leave its files out.
func Find(home, cwd string) []Source {
	var out []Source
	seen := map[string]bool{}
	add := func(path string, kind Kind) {
		if seen[path] {
			return
		}
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			return
		}
		seen[path] = true
		out = append(out, Source{Path: path, Kind: kind, Project: projectOf(path, kind, home)})
	}
	for _, k := range Kinds {
		if home != "" {
			for _, rel := range userFiles[k] {
				add(userFile(k, home, rel), k)
			}
		}
		if cwd != "" {
			for _, rel := range projectFiles[k] {
				add(filepath.Join(cwd, filepath.FromSlash(rel)), k)
			}
		}
		if k == ClaudeCode && home != "" {
			for _, dir := range ClaudeProjects(home) {
				add(filepath.Join(dir, ".mcp.json"), k)
			}
		}
	}
	return out
}

// ClaudeProjects returns the folders Claude Code keeps project settings for, in
// ~/.claude.json; none if it cannot be read.
func ClaudeProjects(home string) []string {
	data, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		return nil
	}
	doc, err := parseJSONC("", data)
	if err != nil {
		return nil
	}
	var dirs []string
	if projects := doc.root.get("projects"); projects != nil {
		for _, m := range projects.members {
			if filepath.IsAbs(m.key) {
				dirs = append(dirs, m.key)
			}
		}
	}
	return dirs
}

// DefaultFile is the file setup changes for a client: its user-level file (the one that
// exists, else this platform's), so that toolsift serves every project. VS Code's is its
// user mcp.json unless only the workspace has one.
func DefaultFile(kind Kind, home, cwd string) string {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	candidates := userFiles[kind]
	if kind == VSCode {
		candidates = candidates[:3] // the mcp.json files; settings.json is read, not written
	}
	for _, rel := range candidates {
		if p := userFile(kind, home, rel); exists(p) {
			return p
		}
	}
	if kind == VSCode && cwd != "" {
		if p := filepath.Join(cwd, ".vscode", "mcp.json"); exists(p) {
			return p
		}
	}
	i := 0
	if len(candidates) == 3 { // one per platform, in the order linux, darwin, windows
		switch runtime.GOOS {
		case "darwin":
			i = 1
		case "windows":
			i = 2
		}
	}
	return userFile(kind, home, candidates[i])
}
