package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Detect tells which client a file belongs to, from its name, then from its content.
func Detect(path string, data []byte) (Kind, error) {
	k, _, err := detect(path, data)
	return k, err
}

// detect tells a file's client from its name, then from its content. guessed reports a
// bare mcpServers file, which several clients share.
func detect(path string, data []byte) (kind Kind, guessed bool, err error) {
	if k := kindFromName(path); k != "" {
		return k, false, nil
	}
	doc, jerr := parseJSONC(path, data)
	if jerr != nil {
		if strings.Contains(string(data), "mcp_servers") {
			return Codex, false, nil
		}
		return "", false, jerr
	}
	root := doc.root
	if root.kind != jObject {
		return "", false, fmt.Errorf("%s: %w: want a JSON object, got %s", path, ErrUnknownFormat, root.kind)
	}
	if s := root.get("$schema"); s != nil && strings.Contains(s.text, "opencode") {
		return OpenCode, false, nil
	}
	if root.get("servers") != nil || root.get("inputs") != nil {
		return VSCode, false, nil
	}
	if mcp := root.get("mcp"); mcp != nil && mcp.kind == jObject && root.get("mcpServers") == nil {
		if filepath.Base(path) == "settings.json" {
			return VSCode, false, nil
		}
		return OpenCode, false, nil
	}
	servers := root.get("mcpServers")
	if servers == nil {
		return "", false, fmt.Errorf("%s: %w: no mcpServers, servers or mcp key", path, ErrUnknownFormat)
	}
	if root.get("projects") != nil || root.get("numStartups") != nil {
		return ClaudeCode, false, nil
	}
	if root.get("globalShortcut") != nil {
		return ClaudeDesktop, false, nil
	}
	for _, m := range servers.members {
		for _, k := range []string{"httpUrl", "includeTools", "excludeTools", "trust"} {
			if m.value.get(k) != nil {
				return Gemini, false, nil
			}
		}
	}
	return ClaudeCode, true, nil
}

// kindFromName recognises the file names clients use.
func kindFromName(path string) Kind {
	base := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case base == ".claude.json" || base == ".mcp.json":
		return ClaudeCode
	case base == "claude_desktop_config.json":
		return ClaudeDesktop
	case dir == ".cursor" && base == "mcp.json":
		return Cursor
	case dir == ".vscode" && base == "mcp.json":
		return VSCode
	case dir == "User" && (base == "mcp.json" || base == "settings.json"):
		return VSCode
	case dir == ".gemini" && base == "settings.json":
		return Gemini
	case (dir == ".copilot" || os.Getenv("COPILOT_HOME") != "" && filepath.Dir(path) == filepath.Clean(os.Getenv("COPILOT_HOME"))) && base == "mcp-config.json",
		dir == ".github" && base == "mcp.json":
		return Copilot
	case strings.HasSuffix(base, ".toml"):
		return Codex
	case strings.HasPrefix(base, "opencode") && (strings.HasSuffix(base, ".json") || strings.HasSuffix(base, ".jsonc")):
		return OpenCode
	}
	return ""
}

// projectOf returns the project directory of a project-level file, or "" for a user-level
// one: a project's servers run in its directory, so toolsift must start them there. It is
// relative when path is.
func projectOf(path string, kind Kind, home string) string {
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	base := filepath.Base(path)
	inHome := func(d string) bool { return home != "" && d == filepath.Clean(home) }
	switch kind {
	case ClaudeCode:
		if base == ".mcp.json" {
			return dir
		}
	case Cursor, VSCode, Gemini, Codex, Copilot:
		marker := map[Kind]string{Cursor: ".cursor", VSCode: ".vscode", Gemini: ".gemini", Codex: ".codex", Copilot: ".github"}[kind]
		if filepath.Base(dir) == marker && !inHome(filepath.Dir(dir)) {
			return filepath.Dir(dir)
		}
	case OpenCode:
		if filepath.Base(dir) == "opencode" && filepath.Base(filepath.Dir(dir)) == ".config" {
			return ""
		}
		if filepath.Base(dir) == ".opencode" {
			dir = filepath.Dir(dir)
		}
		if strings.HasPrefix(base, "opencode") && !inHome(dir) {
			return dir
		}
	}
	return ""
}
