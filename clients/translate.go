package clients

import (
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Server types, as toolsift's configuration spells them.
const (
	typeStdio = "stdio"
	typeHTTP  = "http"
	typeSSE   = "sse"
)

// translate turns one client entry into a toolsift server.
func (f *file) translate(key, scope string, raw any, opts Options) (Server, entryStatus) {
	s := Server{Key: key, Name: key, Source: f.src, Scope: scope}
	m, ok := raw.(map[string]any)
	if !ok {
		s.note("want an object with command or url, got %s: left out", describe(raw))
		return s, skipped
	}
	e := &entry{m: m, used: map[string]bool{}, s: &s}
	var t, command, urlStr string
	switch f.src.Kind {
	case Codex:
		t, command, urlStr = e.codex()
	case OpenCode:
		t, command, urlStr = e.opencode()
	default:
		t, command, urlStr = e.mcpServers(f.src.Kind)
	}
	if isSelf(key, command, s.Args) {
		s.Command = command
		s.Notes = nil
		s.note("this is toolsift itself: left out")
		return s, self
	}
	if !e.transport(t, command, urlStr) {
		return s, skipped
	}
	f.vars(&s, opts)
	if len(e.late) > 0 && s.Type != typeStdio {
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		for h, v := range e.late {
			// Header names are case-insensitive: the one from the environment wins, as in Codex.
			for old := range s.Headers {
				if strings.EqualFold(old, h) {
					delete(s.Headers, old)
				}
			}
			s.Headers[h] = v
		}
	}
	if s.URL != "" && !strings.Contains(s.URL, "${") {
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			s.note("url %q is not an http(s) URL, which toolsift needs: left out", s.URL)
			return s, skipped
		}
	}
	if s.Type == typeStdio {
		switch {
		case f.src.Project != "" && s.Cwd == "":
			// The client starts a project's servers in the project; toolsift runs them from
			// wherever it was started unless told.
			s.Cwd = f.src.Project
		case f.src.Project != "" && !filepath.IsAbs(s.Cwd) && !strings.HasPrefix(s.Cwd, "$"):
			s.Cwd = filepath.Join(f.src.Project, s.Cwd)
		case s.Cwd != "" && !filepath.IsAbs(s.Cwd) && !strings.HasPrefix(s.Cwd, "$"):
			s.note("cwd %q is relative: toolsift resolves it against the directory it starts in", s.Cwd)
		}
	}
	s.Allow = validPatterns(&s, "allow", s.Allow)
	s.Deny = validPatterns(&s, "deny", s.Deny)
	if rest := e.unused(); len(rest) > 0 {
		s.note("ignored, toolsift has no such setting: %s", strings.Join(rest, ", "))
	}
	if s.Disabled {
		s.note("disabled in %s: kept with disabled: true", f.src.Kind.Title())
	}
	return s, imported
}

func validPatterns(s *Server, what string, pats []string) []string {
	var out []string
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil {
			s.note("%s pattern %q is not a valid glob: left out", what, p)
			continue
		}
		out = append(out, p)
	}
	return out
}

// isSelf recognises toolsift's own entry, which setup writes and import must not copy into
// toolsift's configuration (it would start itself): the entry setup names, or any entry
// that runs toolsift.
func isSelf(key, command string, args []string) bool {
	if key == EntryName {
		return true
	}
	if command == "" {
		return false
	}
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	if base == "toolsift" {
		return true
	}
	for _, a := range args {
		if strings.Contains(a, "github.com/toolsift/toolsift") {
			return true
		}
	}
	return false
}

// normType maps the transport names clients use to toolsift's; ok is false for one toolsift
// does not speak.
func normType(t string) (string, bool) {
	switch strings.ToLower(t) {
	case "":
		return "", true
	case "stdio", "local":
		return typeStdio, true
	case "http", "streamable-http", "streamablehttp", "streamable_http", "remote":
		return typeHTTP, true
	case "sse":
		return typeSSE, true
	}
	return "", false
}

// transport settles the server's type from what the entry gave, reporting what does not fit.
// t is the type the client gave or implied ("" for none); ok is false if the server cannot
// be imported.
func (e *entry) transport(t, command, urlStr string) bool {
	s := e.s
	norm, known := normType(t)
	if !known {
		s.note("type %q is not a transport toolsift speaks (stdio, http, sse): left out", t)
		return false
	}
	switch {
	case norm != "":
	case command != "":
		norm = typeStdio
	case urlStr != "":
		norm = typeHTTP
	default:
		s.note("neither command nor url is set: left out")
		return false
	}
	s.Type = norm
	if norm == typeStdio {
		if command == "" {
			s.note("a stdio server without a command: left out")
			return false
		}
		s.Command = command
		if urlStr != "" {
			s.note("has a url as well as a command: started the command, ignored the url")
		}
		if len(s.Headers) > 0 {
			s.note("headers ignored: a stdio server takes none")
			s.Headers = nil
		}
		return true
	}
	if urlStr == "" {
		s.note("a %s server without a url: left out", norm)
		return false
	}
	s.URL = urlStr
	if command != "" {
		s.note("has a command as well as a url: used the url, ignored the command")
	}
	if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
		s.note("args, env and cwd ignored: a remote server takes none")
	}
	s.Args, s.Env, s.Cwd = nil, nil, ""
	return true
}

// mcpServers reads the mcpServers / servers entry shared, with variations, by Claude Code,
// Claude Desktop, Cursor, VS Code and Gemini CLI.
func (e *entry) mcpServers(kind Kind) (t, command, urlStr string) {
	s := e.s
	t = e.str("type")
	command = e.str("command")
	s.Args = e.strs("args")
	s.Env = e.strMap("env")
	s.Cwd = e.str("cwd")
	urlStr = e.str("url")
	s.Headers = e.strMap("headers")
	if d, ok := e.boolean("disabled"); ok && d {
		s.Disabled = true
	}
	if en, ok := e.boolean("enabled"); ok && !en {
		s.Disabled = true
	}
	if ef := e.str("envFile"); ef != "" {
		s.note("envFile %q not read: toolsift has no env files; export its variables where toolsift starts, or list them under env", ef)
	}
	if _, ok := e.get("headersHelper"); ok {
		s.note("headersHelper not carried over: toolsift cannot run a command for headers; write them under headers with ${VAR}")
	}
	switch kind {
	case Gemini:
		// Gemini CLI: httpUrl is streamable HTTP, url is SSE, timeout is per request in ms.
		httpURL := e.str("httpUrl")
		if t == "" {
			switch {
			case httpURL != "":
				t = typeHTTP
			case urlStr != "":
				t = typeSSE
			}
		}
		if httpURL != "" {
			urlStr = httpURL
		}
		s.CallTimeout = e.duration("timeout", time.Millisecond)
		s.Allow = e.strs("includeTools")
		s.Deny = e.strs("excludeTools")
		s.Description = e.str("description")
	case Cursor:
		if t == "" && command == "" && strings.HasSuffix(strings.TrimRight(urlStr, "/"), "/sse") {
			t = typeSSE
		}
	case Copilot:
		// Copilot CLI: "local" is a program it starts; tools lists the tools it may use
		// ("*": all); deferTools is its own lazy loading, which toolsift does instead.
		if t == "local" {
			t = typeStdio
		}
		if tools := e.strs("tools"); len(tools) > 0 && !slices.Contains(tools, "*") {
			s.Allow = tools
		}
		e.get("deferTools")
		s.CallTimeout = e.duration("timeout", time.Millisecond)
	}
	return t, command, urlStr
}

// codex reads a [mcp_servers.NAME] table of Codex's config.toml.
func (e *entry) codex() (t, command, urlStr string) {
	s := e.s
	command = e.str("command")
	s.Args = e.strs("args")
	s.Env = e.strMap("env")
	// env_vars names variables Codex passes on from its environment; toolsift passes its
	// whole environment, so there is nothing to carry over.
	e.get("env_vars")
	s.Cwd = e.str("cwd")
	urlStr = e.str("url")
	s.Headers = e.strMap("http_headers")
	if v := e.str("bearer_token"); v != "" {
		if s.Headers == nil {
			s.Headers = map[string]string{}
		}
		s.Headers["Authorization"] = "Bearer " + v
	}
	// Codex reads these header values from environment variables, as ${VAR} does.
	e.late = map[string]string{}
	for h, v := range e.strMap("env_http_headers") {
		e.late[h] = "${" + v + "}"
	}
	if v := e.str("bearer_token_env_var"); v != "" {
		e.late["Authorization"] = "Bearer ${" + v + "}"
	}
	if en, ok := e.boolean("enabled"); ok && !en {
		s.Disabled = true
	}
	s.StartupTimeout = e.duration("startup_timeout_sec", time.Second)
	if s.StartupTimeout == 0 {
		s.StartupTimeout = e.duration("startup_timeout_ms", time.Millisecond)
	} else {
		e.get("startup_timeout_ms") // Codex too prefers the seconds
	}
	s.CallTimeout = e.duration("tool_timeout_sec", time.Second)
	s.Allow = e.strs("enabled_tools")
	s.Deny = e.strs("disabled_tools")
	// Codex decides by command first.
	if command != "" {
		t = typeStdio
	}
	return t, command, urlStr
}

// opencode reads an entry of opencode's mcp object.
func (e *entry) opencode() (t, command, urlStr string) {
	s := e.s
	t = e.str("type")
	if en, ok := e.boolean("enabled"); ok && !en {
		s.Disabled = true
	}
	if d, ok := e.boolean("disabled"); ok && d {
		s.Disabled = true
	}
	s.StartupTimeout = e.duration("timeout", time.Millisecond)
	if cmd := e.strs("command"); len(cmd) > 0 {
		command, s.Args = cmd[0], cmd[1:]
	}
	s.Env = e.strMap("environment")
	urlStr = e.str("url")
	s.Headers = e.strMap("headers")
	if t == "remote" && strings.HasSuffix(strings.TrimRight(urlStr, "/"), "/sse") {
		t = typeSSE
	}
	return t, command, urlStr
}
