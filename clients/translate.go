package clients

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Server types, as toolsift's configuration spells them.
const (
	typeStdio = "stdio"
	typeHTTP  = "http"
	typeSSE   = "sse"
)

// entry reads one server entry of a client file, remembering which keys it used so that
// the others can be reported.
type entry struct {
	m    map[string]any
	used map[string]bool
	s    *Server
	// late are headers already in toolsift's syntax, added after the client's variables
	// are translated.
	late map[string]string
}

func (s *Server) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !slices.Contains(s.Notes, msg) {
		s.Notes = append(s.Notes, msg)
	}
}

func (e *entry) get(key string) (any, bool) {
	v, ok := e.m[key]
	if ok {
		e.used[key] = true
	}
	return v, ok && v != nil
}

// str reads a string; numbers and booleans are taken as their text.
func (e *entry) str(key string) string {
	v, ok := e.get(key)
	if !ok {
		return ""
	}
	if s, ok := scalarText(v); ok {
		return s
	}
	e.s.note("%s: want a string, got %s: ignored", key, describe(v))
	return ""
}

func (e *entry) strs(key string) []string {
	v, ok := e.get(key)
	if !ok {
		return nil
	}
	if s, ok := v.(string); ok {
		e.s.note("%s: want a list of strings, got a string: took it as a list of one", key)
		return []string{s}
	}
	list, ok := v.([]any)
	if !ok {
		e.s.note("%s: want a list of strings, got %s: ignored", key, describe(v))
		return nil
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := scalarText(item)
		if !ok {
			e.s.note("%s[%d]: want a string, got %s: left out", key, i, describe(item))
			continue
		}
		out = append(out, s)
	}
	return out
}

func (e *entry) strMap(key string) map[string]string {
	v, ok := e.get(key)
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		e.s.note("%s: want an object of names to strings, got %s: ignored", key, describe(v))
		return nil
	}
	out := make(map[string]string, len(m))
	for k, item := range m {
		s, ok := scalarText(item)
		if !ok {
			e.s.note("%s.%s: want a string, got %s: left out", key, k, describe(item))
			continue
		}
		out[k] = s
	}
	return out
}

func (e *entry) boolean(key string) (value, ok bool) {
	v, ok := e.get(key)
	if !ok {
		return false, false
	}
	b, ok := v.(bool)
	if !ok {
		e.s.note("%s: want true or false, got %s: ignored", key, describe(v))
	}
	return b, ok
}

func (e *entry) number(key string) (float64, bool) {
	v, ok := e.get(key)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	}
	e.s.note("%s: want a number, got %s: ignored", key, describe(v))
	return 0, false
}

// duration reads a number of unit (time.Second, time.Millisecond) as a duration.
func (e *entry) duration(key string, unit time.Duration) time.Duration {
	n, ok := e.number(key)
	if !ok {
		return 0
	}
	d := time.Duration(n * float64(unit))
	if d <= 0 {
		e.s.note("%s: %v is not a positive time: ignored", key, n)
		return 0
	}
	return d
}

// unused lists the keys the entry has that nothing read, sorted.
func (e *entry) unused() []string {
	var keys []string
	for k := range e.m {
		if !e.used[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, int64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

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

var (
	// braceVar is ${...} as VS Code and Cursor write variables.
	braceVar = regexp.MustCompile(`\$\{([^}]*)\}`)
	// envRef is a reference toolsift's configuration expands: ${VAR} or ${VAR:-default}.
	envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)
	// geminiVar is $VAR or ${VAR}, which Gemini CLI expands.
	geminiVar = regexp.MustCompile(`\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([^}]*)\})`)
	// opencodeVar is {env:VAR} or {file:PATH}, which opencode expands.
	opencodeVar = regexp.MustCompile(`\{(env|file):([^}]*)\}`)
)

// vars translates the client's variable syntax in every string of s into toolsift's
// ${VAR}, reporting what has no translation.
func (f *file) vars(s *Server, opts Options) {
	var tr func(string) string
	client := f.src.Kind.Title()
	literal := func(v string) {
		// This client passes ${VAR} through untouched, but toolsift expands it.
		for _, m := range envRef.FindAllStringSubmatch(v, -1) {
			s.note("%s is passed as is by %s, but toolsift reads it as the environment variable %s", m[0], client, m[1])
		}
	}
	switch f.src.Kind {
	case ClaudeCode:
		return // Claude Code expands ${VAR} and ${VAR:-default}, as toolsift does.
	case ClaudeDesktop, Codex:
		tr = func(v string) string { literal(v); return v }
	case Gemini:
		tr = func(v string) string {
			return geminiVar.ReplaceAllStringFunc(v, func(ref string) string {
				m := geminiVar.FindStringSubmatch(ref)
				name := m[1] + m[2]
				if !envRef.MatchString("${" + name + "}") {
					s.note("%s is not a variable name toolsift knows: left as is", ref)
					return ref
				}
				return "${" + name + "}"
			})
		}
	case OpenCode:
		tr = func(v string) string {
			literal(v)
			return opencodeVar.ReplaceAllStringFunc(v, func(ref string) string {
				m := opencodeVar.FindStringSubmatch(ref)
				if m[1] == "env" {
					return "${" + m[2] + "}"
				}
				s.note("%s reads a file, which toolsift cannot: left as is; put the value in an environment variable and write ${VAR}", ref)
				return ref
			})
		}
	case Cursor, VSCode:
		tr = func(v string) string {
			return braceVar.ReplaceAllStringFunc(v, func(ref string) string { return f.editorVar(s, ref, opts) })
		}
	}
	s.Command = tr(s.Command)
	for i, a := range s.Args {
		s.Args[i] = tr(a)
	}
	for k, v := range s.Env {
		s.Env[k] = tr(v)
	}
	s.Cwd = tr(s.Cwd)
	s.URL = tr(s.URL)
	for k, v := range s.Headers {
		s.Headers[k] = tr(v)
	}
}

// editorVar translates one ${...} of VS Code or Cursor.
func (f *file) editorVar(s *Server, ref string, opts Options) string {
	inner := ref[2 : len(ref)-1]
	name, arg, hasArg := strings.Cut(inner, ":")
	workspace := f.src.Project
	switch {
	case hasArg && name == "env":
		return "${" + arg + "}"
	case hasArg && name == "input":
		v := envName(arg)
		what := ""
		if d := f.inputs[arg]; d != "" {
			what = fmt.Sprintf(" (%q)", d)
		}
		s.note("%s is a prompt%s %s shows, which toolsift cannot: replaced with ${%s}; export %s where toolsift starts", ref, what, f.src.Kind.Title(), v, v)
		return "${" + v + "}"
	case inner == "userHome" && opts.Home != "":
		return opts.Home
	case inner == "workspaceFolder" || inner == "workspaceFolderBasename":
		if workspace == "" {
			if opts.Dir == "" {
				s.note("%s has no value outside a workspace: left as is", ref)
				return ref
			}
			workspace = opts.Dir
			s.note("%s has no value in a user-level file: used %s, where the import ran", ref, opts.Dir)
		}
		if inner == "workspaceFolderBasename" {
			return filepath.Base(workspace)
		}
		return workspace
	case inner == "pathSeparator" || inner == "/":
		return string(filepath.Separator)
	}
	if envRef.MatchString(ref) {
		s.note("%s is not a %s variable toolsift knows: toolsift reads it as the environment variable %s", ref, f.src.Kind.Title(), inner)
	} else {
		s.note("%s is not a %s variable toolsift knows: left as is", ref, f.src.Kind.Title())
	}
	return ref
}

// envName makes an environment variable name of a VS Code input id: "github-token" becomes
// GITHUB_TOKEN.
func envName(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToUpper(r))
		default:
			b.WriteByte('_')
		}
	}
	name := strings.Trim(b.String(), "_")
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "INPUT_" + name
	}
	return name
}
