// Package clients reads the MCP server configurations of MCP clients — Claude Code, Claude
// Desktop, Cursor, VS Code, Gemini CLI, Codex and opencode — translates their servers into
// toolsift's configuration, and switches a client over to toolsift and back.
//
// Nothing is dropped silently: whatever cannot be carried over as it was is a Warning that
// names the file and the server, and a note in the rendered configuration.
package clients

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
)

// Kinds lists every client, in the order their files are searched.
var Kinds = []Kind{ClaudeCode, ClaudeDesktop, Cursor, VSCode, Gemini, Codex, OpenCode}

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

// Warning is something that could not be carried over as it was.
type Warning struct {
	// File is the client file; Server the server's name in it, empty for the whole file.
	File, Server, Msg string
}

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
	f, err := parseFile(path, data, kind, opts, false)
	if err != nil {
		return Import{}, err
	}
	return f.imp, nil
}

// entryStatus says what import did with one entry of a client file, which is also what
// setup does with it: imported entries move to toolsift, others stay in the client.
type entryStatus int

const (
	imported entryStatus = iota
	// self is toolsift's own entry: left out of the import, replaced by setup.
	self
	// skipped entries could not be translated; they stay in the client.
	skipped
	// shadowed entries are overridden by a later entry of the same name: the client itself
	// ignores them, and setup drops them.
	shadowed
)

// entryRef is one entry of a servers block.
type entryRef struct {
	key    string
	status entryStatus
	// server is the imported server, named as in toolsift's configuration.
	server Server
	// raw is the entry's text, key included, for writing it back unchanged; span is where
	// it is in a JSON file.
	raw  string
	span [2]int
	// self is the command of toolsift's own entry.
	self Entry
}

// block is one table of servers in a client file, such as mcpServers.
type block struct {
	// path are the keys leading to it from the file's root.
	path []string
	// scope is Server.Scope for its servers.
	scope string
	// primary is the block setup puts toolsift's entry in.
	primary bool
	node    *jnode // JSON files; nil if the file does not have it
	entries []entryRef
}

// file is a parsed client file.
type file struct {
	src    Source
	data   []byte
	json   *jdoc    // JSON files
	toml   *tomlDoc // Codex
	blocks []*block
	imp    Import
	// inputs are VS Code's prompt definitions by id, for messages.
	inputs map[string]string
}

// parseFile reads a client file. allProjects reads every project of ~/.claude.json, for
// undo; otherwise only the one opts.Dir is in.
func parseFile(path string, data []byte, kind Kind, opts Options, allProjects bool) (*file, error) {
	guessed := false
	if kind == "" {
		var err error
		if kind, guessed, err = detect(path, data); err != nil {
			return nil, err
		}
	}
	f := &file{src: Source{Path: path, Kind: kind}, data: data}
	f.src.Project = projectOf(path, kind, opts.Home)
	f.imp.Sources = []Source{f.src}
	if guessed {
		f.warnFile("read as Claude Code's .mcp.json format (its mcpServers could belong to several clients); name the client if it is another one's")
	}
	var err error
	if kind == Codex {
		err = f.readTOML(opts)
	} else {
		err = f.readJSON(opts, allProjects)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// warn records a warning about the server key.
func (f *file) warn(key, scope, msg string) {
	f.imp.Warnings = append(f.imp.Warnings, newWarning(f.src.Path, key, scope, msg))
}

// warnFile records a warning about the whole file.
func (f *file) warnFile(msg string) {
	f.imp.Warnings = append(f.imp.Warnings, Warning{File: f.src.Path, Msg: msg})
}

// newWarning makes a warning about the server key, in scope if the file has several.
func newWarning(file, key, scope, msg string) Warning {
	if key == "" {
		key = "(no name)"
	}
	w := Warning{File: file, Server: key, Msg: msg}
	if scope != "" {
		w.Server = key + " (" + scope + ")"
	}
	return w
}

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
	case Cursor, VSCode, Gemini, Codex:
		marker := map[Kind]string{Cursor: ".cursor", VSCode: ".vscode", Gemini: ".gemini", Codex: ".codex"}[kind]
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

// readJSON reads the servers blocks of a JSON client file.
func (f *file) readJSON(opts Options, allProjects bool) error {
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
			f.claudeProjects(projects, opts, allProjects)
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

func (f *file) jsonErr(n *jnode, format string, args ...any) error {
	line, col := lineCol(f.data, n.start)
	return &SyntaxError{File: f.src.Path, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// claudeProjects adds the local servers of the project opts.Dir is in (every project with
// allProjects), and reports those of other projects.
func (f *file) claudeProjects(projects *jnode, opts Options, allProjects bool) {
	current := ""
	if opts.Dir != "" {
		// Claude Code keys a project by the directory it was started in; the nearest
		// enclosing one is the project a user in a subdirectory is working on.
		for d := filepath.Clean(opts.Dir); ; d = filepath.Dir(d) {
			if p := projects.get(d); p != nil {
				current = d
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, m := range projects.members {
		servers := m.value.get("mcpServers")
		if servers == nil || servers.kind != jObject || len(servers.members) == 0 {
			continue
		}
		if allProjects || m.key == current {
			f.blocks = append(f.blocks, &block{path: []string{"projects", m.key, "mcpServers"}, scope: "project " + m.key})
			continue
		}
		names := make([]string, len(servers.members))
		for i, s := range servers.members {
			names[i] = s.key
		}
		f.warnFile(fmt.Sprintf("project %s has local servers of its own (%s), not imported: run the import in that directory to add them",
			m.key, strings.Join(names, ", ")))
	}
}

// finish names an imported server, records the notes on s as warnings, and adds it.
func (f *file) finish(s *Server, st entryStatus, ref *entryRef) {
	if st == imported {
		s.Name = sanitize(s.Key)
		if s.Name != s.Key {
			s.Notes = append(s.Notes, fmt.Sprintf("renamed to %q: toolsift server names use letters, digits, _ and -, at most 40", s.Name))
		}
	}
	for _, n := range s.Notes {
		f.warn(s.Key, s.Scope, n)
	}
	switch st {
	case imported:
		ref.server = *s
		ref.server.Name = f.imp.add(*s)
	case self:
		ref.self = Entry{Command: s.Command, Args: s.Args}
	}
}

// Merge combines imports in order. A name seen again is imported once when its settings are
// the same; otherwise the later server is renamed and disabled, so that nothing is lost and
// no tool is listed twice.
func Merge(imps ...Import) Import {
	var out Import
	for _, imp := range imps {
		out.Sources = append(out.Sources, imp.Sources...)
		out.Warnings = append(out.Warnings, imp.Warnings...)
		for _, s := range imp.Servers {
			out.add(s)
		}
	}
	return out
}

// add appends s unless a server of that name is there already (see Merge), and returns the
// name s has in the configuration.
func (imp *Import) add(s Server) string {
	i := slices.IndexFunc(imp.Servers, func(o Server) bool { return o.Name == s.Name })
	if i < 0 {
		imp.Servers = append(imp.Servers, s)
		return s.Name
	}
	prev := imp.Servers[i]
	w := newWarning(s.Source.Path, s.Key, s.Scope, "")
	if sameServer(prev, s) {
		w.Msg = fmt.Sprintf("same as %q from %s: imported once", prev.Name, where(prev))
		imp.Warnings = append(imp.Warnings, w)
		imp.Servers[i].Notes = append(imp.Servers[i].Notes, fmt.Sprintf("also in %s", where(s)))
		return prev.Name
	}
	name := uniqueName(s.Name, imp.Servers)
	w.Msg = fmt.Sprintf("%q from %s has other settings: imported as %q, disabled; compare the two, then delete one or enable it", prev.Name, where(prev), name)
	imp.Warnings = append(imp.Warnings, w)
	s.Notes = append(s.Notes, w.Msg)
	s.Name = name
	s.Disabled = true
	imp.Servers = append(imp.Servers, s)
	return name
}

func where(s Server) string {
	if s.Scope != "" {
		return s.Source.Path + " (" + s.Scope + ")"
	}
	return s.Source.Path
}

// sameServer reports whether two servers start the same thing the same way.
func sameServer(a, b Server) bool {
	return a.Type == b.Type && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		mapsEqual(a.Env, b.Env) && a.Cwd == b.Cwd && a.URL == b.URL && mapsEqual(a.Headers, b.Headers) &&
		slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny) && a.Disabled == b.Disabled
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// maxName is the longest server name whose default prefix toolsift accepts.
const maxName = 40

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)

// sanitize makes a client's server name a valid toolsift name: runs of other characters
// become one -, and the name is cut to 40 characters.
func sanitize(name string) string {
	if validName.MatchString(name) {
		return name
	}
	var b strings.Builder
	dash := false
	for _, r := range name {
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > maxName {
		s = strings.TrimRight(s[:maxName], "-")
	}
	if s == "" {
		s = "server"
	}
	return s
}

// uniqueName returns name-2, name-3 … whichever is free.
func uniqueName(name string, taken []Server) string {
	for i := 2; ; i++ {
		suffix := fmt.Sprintf("-%d", i)
		base := name
		if len(base)+len(suffix) > maxName {
			base = base[:maxName-len(suffix)]
		}
		cand := base + suffix
		if !slices.ContainsFunc(taken, func(s Server) bool { return s.Name == cand }) {
			return cand
		}
	}
}
