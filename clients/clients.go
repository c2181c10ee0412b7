// Package clients reads the MCP server configurations of MCP clients — Claude Code, Claude
// Desktop, Cursor, VS Code, Gemini CLI, Codex, opencode and Copilot CLI — translates their servers into
// toolsift's configuration, and switches a client over to toolsift and back.
//
// Nothing is dropped silently: whatever cannot be carried over as it was is a Warning that
// names the file and the server, and a note in the rendered configuration.
package clients

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// Kind names a client, as the user types it.
type Kind string

// The clients whose configurations are read.
const (
	ClaudeCode    Kind = "claude-code"
	ClaudeDesktop Kind = "claude-desktop"
	Cursor        Kind = "cursor"
	VSCode        Kind = "vscode"
	Gemini        Kind = "gemini"
	Codex         Kind = "codex"
	OpenCode      Kind = "opencode"
	Copilot       Kind = "copilot"
)

// Kinds lists every client, in the order their files are searched.
var Kinds = []Kind{ClaudeCode, ClaudeDesktop, Cursor, VSCode, Gemini, Codex, OpenCode, Copilot}

// Title is the client's product name, such as "Claude Code".
func (k Kind) Title() string {
	switch k {
	case ClaudeCode:
		return "Claude Code"
	case ClaudeDesktop:
		return "Claude Desktop"
	case Cursor:
		return "Cursor"
	case VSCode:
		return "VS Code"
	case Gemini:
		return "Gemini CLI"
	case Codex:
		return "Codex"
	case OpenCode:
		return "opencode"
	case Copilot:
		return "Copilot CLI"
	}
	return string(k)
}

// ParseKind returns the client named s; a few spellings people use are accepted
// ("claude", "code", "gemini-cli").
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "claude-code", "claude", "claudecode", "claude_code":
		return ClaudeCode, nil
	case "claude-desktop", "claudedesktop", "claude_desktop", "desktop":
		return ClaudeDesktop, nil
	case "cursor":
		return Cursor, nil
	case "vscode", "vs-code", "code", "vs_code":
		return VSCode, nil
	case "gemini", "gemini-cli", "gemini_cli":
		return Gemini, nil
	case "codex", "codex-cli":
		return Codex, nil
	case "opencode", "open-code":
		return OpenCode, nil
	case "copilot", "copilot-cli", "github-copilot", "gh-copilot":
		return Copilot, nil
	}
	return "", fmt.Errorf("unknown client %q (known: %s)", s, kindList())
}

func kindList() string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// Source is one client configuration file.
type Source struct {
	Path string
	Kind Kind
	// Project is the directory of the project the file belongs to (the folder holding
	// .mcp.json, .vscode/, .cursor/ …); empty for a user-level file.
	Project string
}

// Server is one server read from a client, translated to toolsift's terms.
type Server struct {
	// Name is the server's name in toolsift's configuration: Key made valid and unique.
	Name string
	// Key is the server's name in the client's file.
	Key    string
	Source Source
	// Scope says where in the file the server is when a file has several places, such as
	// "project /home/me/app" for a local server in ~/.claude.json; empty otherwise.
	Scope string

	// Type is "stdio", "http" or "sse".
	Type        string
	Command     string
	Args        []string
	Env         map[string]string
	Cwd         string
	URL         string
	Headers     map[string]string
	Description string
	// Allow and Deny are the tool-name patterns the client kept or dropped.
	Allow, Deny []string
	Disabled    bool
	// StartupTimeout and CallTimeout are zero unless the client set them.
	StartupTimeout, CallTimeout time.Duration

	// Notes are the warnings about this server, also in Import.Warnings; Render writes them
	// as comments beside it.
	Notes []string
}

// ProjectDir is the folder of the project the server belongs to: a project file's folder, or
// the project of a local server in ~/.claude.json; empty for a user's server.
func (s Server) ProjectDir() string {
	if dir, ok := strings.CutPrefix(s.Scope, "project "); ok {
		return dir
	}
	return s.Source.Project
}

// Warning is something that could not be carried over as it was.
type Warning struct {
	// File is the client file; Server the server's name in it, empty for the whole file.
	File, Server, Msg string
}

// String writes the warning as file: server "name": message.
func (w Warning) String() string {
	if w.Server == "" {
		return w.File + ": " + w.Msg
	}
	return fmt.Sprintf("%s: server %q: %s", w.File, w.Server, w.Msg)
}

// Import is what was read from one or more client files.
type Import struct {
	// Sources are the files read, in order.
	Sources  []Source
	Servers  []Server
	Warnings []Warning
}

// Options says where the user is.
type Options struct {
	// Home is the user's home directory: it stands in for ${userHome} and picks out
	// user-level files. Empty means no translation of ${userHome}.
	Home string
	// Dir is the directory the import runs in: it picks the project whose local servers
	// ~/.claude.json holds, and stands in for ${workspaceFolder} in user-level files.
	Dir string
	// Named says the user named the file to read: a project's servers that its client has
	// not approved yet are imported enabled, since naming the file is approving it. A
	// server the client disabled stays disabled either way.
	Named bool
	// State is toolsift's state folder, where setup keeps backups and what it moved (see
	// dirs.State); setup needs it, import does not.
	State string
}

// ErrUnknownFormat means a file is none of the formats this package reads.
var ErrUnknownFormat = errors.New("not a known MCP client configuration")

// Read reads one client file. An empty kind means Detect.
func Read(path string, kind Kind, opts Options) (Import, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Import{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return Parse(path, data, kind, opts)
}

// Parse reads one client file's contents; path names it in messages and says where its
// project is.
func Parse(path string, data []byte, kind Kind, opts Options) (Import, error) {
	f, err := parseFile(path, data, kind, opts)
	if err != nil {
		return Import{}, err
	}
	return f.imp, nil
}
