package clients

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// testOpts is a user /home/me working in the project /home/me/src/app, which the sample
// ~/.claude.json has local servers for.
var testOpts = Options{Home: "/home/me", Dir: "/home/me/src/app"}

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./clients -update to write it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run with -update if that is intended):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// loads checks that config.Load would accept the rendered configuration, with every
// variable unset but defaults applied, and that it holds the servers imported.
func loads(t *testing.T, name string, rendered []byte, imp Import) {
	t.Helper()
	// The samples are read by relative paths, which a project is not named by in a
	// configuration: import reads absolute ones.
	rendered = bytes.ReplaceAll(rendered, []byte("\n  testdata/"), []byte("\n  /testdata/"))
	cfg, err := config.Parse(name, rendered, func(string) (string, bool) { return "", true })
	if err != nil {
		t.Fatalf("config.Parse of the rendered %s: %v\n%s", name, err, rendered)
	}
	// Servers of every folder first, then each project's, in the order the import met them.
	served := slices.Clone(cfg.Servers)
	var dirs []string
	for _, s := range imp.Servers {
		if dir := s.ProjectDir(); dir != "" && !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			dir = "/" + dir
		}
		served = append(served, cfg.Projects[dir]...)
	}
	want := slices.Clone(imp.Servers)
	slices.SortStableFunc(want, func(a, b Server) int {
		return cmp.Compare(slices.Index(dirs, a.ProjectDir()), slices.Index(dirs, b.ProjectDir()))
	})
	if len(served) != len(imp.Servers) {
		t.Fatalf("config has %d servers, import %d", len(served), len(imp.Servers))
	}
	for i, s := range want {
		c := served[i]
		if c.Name != s.Name || c.Type != s.Type || c.Disabled != s.Disabled || c.Command != s.Command || !slices.Equal(c.Args, s.Args) && len(s.Args) > 0 {
			t.Errorf("server %d: config has %+v, import %+v", i, c, s)
		}
	}
}

// withWarnings appends the warnings to a golden file as comments, so that one file shows
// what a user sees on stdout and on stderr.
func withWarnings(rendered []byte, ws []Warning) []byte {
	var b strings.Builder
	b.Write(rendered)
	b.WriteString("\n# --- warnings on stderr ---\n")
	for _, w := range ws {
		b.WriteString("# " + w.String() + "\n")
	}
	return []byte(b.String())
}

func TestReadGolden(t *testing.T) {
	userCursor := Options{Home: "testdata/cursor", Dir: "/home/me/src/app"}
	tests := []struct {
		name string
		file string
		kind Kind
		opts Options
	}{
		{"claude-code-user", "testdata/claude-code/.claude.json", "", testOpts},
		{"claude-code-other-dir", "testdata/claude-code/.claude.json", "", Options{Home: "/home/me", Dir: "/tmp"}},
		{"claude-code-project", "testdata/claude-code/.mcp.json", "", testOpts},
		{"claude-desktop", "testdata/claude-desktop/claude_desktop_config.json", "", testOpts},
		{"cursor-project", "testdata/cursor/.cursor/mcp.json", "", testOpts},
		{"cursor-user", "testdata/cursor/.cursor/mcp.json", "", userCursor},
		{"vscode", "testdata/vscode/.vscode/mcp.json", "", testOpts},
		{"vscode-settings", "testdata/vscode/User/settings.json", "", testOpts},
		{"gemini", "testdata/gemini/.gemini/settings.json", "", testOpts},
		{"codex", "testdata/codex/config.toml", "", testOpts},
		{"opencode", "testdata/opencode/opencode.jsonc", "", testOpts},
		{"opencode-v2", "testdata/opencode/opencode.v2.json", "", testOpts},
		{"copilot", "testdata/copilot/.copilot/mcp-config.json", "", testOpts},
		{"duplicates", "testdata/hostile/duplicates.json", "", testOpts},
		{"duplicates-as-cursor", "testdata/hostile/duplicates.json", Cursor, testOpts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			imp, err := Read(tt.file, tt.kind, tt.opts)
			if err != nil {
				t.Fatalf("Read(%q) = %v", tt.file, err)
			}
			rendered, err := Render(imp, tt.opts.Home)
			if err != nil {
				t.Fatal(err)
			}
			loads(t, tt.name, rendered, imp)
			golden(t, tt.name+".yaml", withWarnings(rendered, imp.Warnings))
		})
	}
}

// TestMergeAll imports every sample at once, as toolsift import does with no FILE: names
// repeated across files are resolved and the whole loads.
func TestMergeAll(t *testing.T) {
	files := []string{
		"testdata/claude-code/.claude.json", "testdata/claude-code/.mcp.json",
		"testdata/claude-desktop/claude_desktop_config.json", "testdata/cursor/.cursor/mcp.json",
		"testdata/vscode/.vscode/mcp.json", "testdata/vscode/User/settings.json",
		"testdata/gemini/.gemini/settings.json", "testdata/codex/config.toml",
		"testdata/opencode/opencode.jsonc", "testdata/opencode/opencode.v2.json",
	}
	var imps []Import
	for _, f := range files {
		imp, err := Read(f, "", testOpts)
		if err != nil {
			t.Fatal(err)
		}
		imps = append(imps, imp)
	}
	imp := Merge(imps...)
	rendered, err := Render(imp, testOpts.Home)
	if err != nil {
		t.Fatal(err)
	}
	loads(t, "merged", rendered, imp)
	golden(t, "merged.yaml", withWarnings(rendered, imp.Warnings))
	if len(imp.Sources) != len(files) {
		t.Errorf("Sources = %d, want %d", len(imp.Sources), len(files))
	}
}

func TestRenderEmpty(t *testing.T) {
	imp, err := Parse("x/.mcp.json", []byte(`{"mcpServers": {}}`), "", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := Render(imp, "")
	if err != nil {
		t.Fatal(err)
	}
	loads(t, "empty", rendered, imp)
	if !strings.Contains(string(rendered), "mcpServers: {}") {
		t.Errorf("Render = %s, want mcpServers: {}", rendered)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		file string
		kind Kind
		want string
	}{
		{"testdata/hostile/empty.json", ClaudeCode, "testdata/hostile/empty.json: empty file: want a JSON object"},
		{"testdata/hostile/empty.json", "", "testdata/hostile/empty.json: empty file"},
		{"testdata/hostile/blank.mcp.json", "", "testdata/hostile/blank.mcp.json: empty file"},
		{"testdata/hostile/invalid.json", "", `testdata/hostile/invalid.json:5:7: want , or } after the value of "command", got '"' (a missing comma?)`},
		{"testdata/hostile/unterminated.jsonc", VSCode, "testdata/hostile/unterminated.jsonc:3:5: comment opened here is never closed with */"},
		{"testdata/hostile/unterminated.jsonc", "", "testdata/hostile/unterminated.jsonc:3:5: comment opened here is never closed"},
		{"testdata/hostile/not-servers.json", "", "testdata/hostile/not-servers.json:1:16: mcpServers: want an object of servers by name, got a list"},
		{"testdata/hostile/unknown.json", "", "testdata/hostile/unknown.json: not a known MCP client configuration: no mcpServers, servers or mcp key"},
		{"testdata/hostile/invalid.toml", "", "testdata/hostile/invalid.toml:2:"},
		{"testdata/codex/config.toml", ClaudeCode, "testdata/codex/config.toml:1:1: want a value, got '#'"},
		{"testdata/claude-code/.mcp.json", Codex, "testdata/claude-code/.mcp.json:1:1:"},
		{"testdata/hostile/nonexistent.json", "", "reading testdata/hostile/nonexistent.json"},
	}
	for _, tt := range tests {
		_, err := Read(tt.file, tt.kind, testOpts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%q, %q) = %v, want an error containing %q", tt.file, tt.kind, err, tt.want)
		}
	}
	if _, err := Read("testdata/hostile/unknown.json", "", testOpts); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Read(unknown.json) = %v, want ErrUnknownFormat", err)
	}
}

func TestJSONC(t *testing.T) {
	tests := []struct {
		src     string
		want    any    // the decoded value, when there is no error
		wantErr string // a substring of the error
	}{
		{`{"a": "x // y /* z */"}`, map[string]any{"a": "x // y /* z */"}, ""},
		{`{"a": 1,}`, map[string]any{"a": 1.0}, ""},
		{`{"a": [1, 2,],}`, map[string]any{"a": []any{1.0, 2.0}}, ""},
		{"// lead\n{\"a\": true} // trail", map[string]any{"a": true}, ""},
		{"/* a */ {/* b */ \"a\" /* c */ : /* d */ null /* e */}", map[string]any{"a": nil}, ""},
		{"\xef\xbb\xbf{\"a\": \"\\u00e9\\n\"}", map[string]any{"a": "é\n"}, ""},
		{`{"a": "\"quoted\" // still a string"}`, map[string]any{"a": `"quoted" // still a string`}, ""},
		{`{"a": -1.5e3}`, map[string]any{"a": -1500.0}, ""},
		{``, nil, "empty file"},
		{"  // only a comment\n", nil, "empty file"},
		{`{,}`, nil, `1:2: want a key in double quotes or }, got ','`},
		{`{"a" 1}`, nil, `1:6: want : after the key "a", got '1'`},
		{`{'a': 1}`, nil, "1:2: want a key in double quotes"},
		{`{"a": 'b'}`, nil, "1:7: strings take double quotes, not single quotes"},
		{`{"a": tru}`, nil, "1:7: want a value, got 't'"},
		{`{"a": 01}`, nil, `1:7: invalid number "01"`},
		{`{"a": 1} x`, nil, "1:10: unexpected 'x' after the end of the JSON value"},
		{`{"a": "open`, nil, "1:7: string is never closed"},
		{"{\"a\": \"line\nbreak\"}", nil, "1:7: string is not closed on its line"},
		{`{"a": "\x"}`, nil, "1:7: invalid string"},
		{`{"a": [1 2]}`, nil, "1:10: want , or ] after a list element, got '2'"},
		{"{\n  \"a\": {\n", nil, "2:8: object opened here is never closed with }"},
		{"{\"a\": 1 /* open", nil, "1:9: comment opened here is never closed"},
		{strings.Repeat("[", maxDepth+1), nil, "nested more than 1000 deep"},
	}
	for _, tt := range tests {
		doc, err := parseJSONC("f.json", []byte(tt.src))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseJSONC(%q) = %v, want an error containing %q", tt.src, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseJSONC(%q) = %v", tt.src, err)
			continue
		}
		if got := doc.root.value(); !equalValues(got, tt.want) {
			t.Errorf("parseJSONC(%q) = %#v, want %#v", tt.src, got, tt.want)
		}
	}
}

func equalValues(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !equalValues(v, y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, equalValues)
	}
	return a == b
}

func TestDetect(t *testing.T) {
	tests := []struct {
		path, content string
		want          Kind
		guessed       bool
	}{
		{"/home/me/.claude.json", `{}`, ClaudeCode, false},
		{"/p/.mcp.json", `{}`, ClaudeCode, false},
		{"/x/Claude/claude_desktop_config.json", `{}`, ClaudeDesktop, false},
		{"/p/.cursor/mcp.json", `{}`, Cursor, false},
		{"/p/.vscode/mcp.json", `{}`, VSCode, false},
		{"/home/me/.config/Code/User/settings.json", `{}`, VSCode, false},
		{"/p/.gemini/settings.json", `{}`, Gemini, false},
		{"/home/me/.codex/config.toml", ``, Codex, false},
		{"/p/opencode.jsonc", `{}`, OpenCode, false},
		{"/tmp/a.json", `{"$schema": "https://opencode.ai/config.json", "mcp": {}}`, OpenCode, false},
		{"/tmp/a.json", `{"mcp": {"x": {"type": "local", "command": ["a"]}}}`, OpenCode, false},
		{"/tmp/settings.json", `{"mcp": {"servers": {}}}`, VSCode, false},
		{"/tmp/a.json", `{"servers": {}, "inputs": []}`, VSCode, false},
		{"/tmp/a.json", `{"mcpServers": {}, "projects": {}}`, ClaudeCode, false},
		{"/tmp/a.json", `{"mcpServers": {}, "globalShortcut": ""}`, ClaudeDesktop, false},
		{"/tmp/a.json", `{"mcpServers": {"a": {"httpUrl": "https://x"}}}`, Gemini, false},
		{"/tmp/a.json", `{"mcpServers": {"a": {"command": "x"}}}`, ClaudeCode, true},
		{"/tmp/a.conf", "[mcp_servers.a]\ncommand = \"x\"\n", Codex, false},
	}
	for _, tt := range tests {
		got, guessed, err := detect(tt.path, []byte(tt.content))
		if err != nil || got != tt.want || guessed != tt.guessed {
			t.Errorf("detect(%q, %q) = %q, %v, %v; want %q, %v", tt.path, tt.content, got, guessed, err, tt.want, tt.guessed)
		}
	}
	if got, err := Detect("/tmp/x.json", []byte(`{"mcpServers": {}}`)); err != nil || got != ClaudeCode {
		t.Errorf("Detect = %q, %v", got, err)
	}
	if _, err := Detect("/tmp/x.json", []byte(`[]`)); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Detect([]) = %v, want ErrUnknownFormat", err)
	}
}

// TestTranslate feeds one entry at a time, the hostile and odd ones especially.
func TestTranslate(t *testing.T) {
	tests := []struct {
		name  string
		kind  Kind
		entry string // JSON, or TOML for Codex (the table's body)
		// want is checked field by field where set; status says whether it was imported.
		want    Server
		status  entryStatus
		note    string // a substring of one of the notes
		project string // the file is a project's
	}{
		{name: "args as a string", kind: ClaudeCode, entry: `{"command": "npx", "args": "server"}`,
			want: Server{Type: "stdio", Command: "npx", Args: []string{"server"}}, note: "took it as a list of one"},
		{name: "numbers as text", kind: ClaudeCode, entry: `{"command": "srv", "args": ["--port", 8080], "env": {"N": 1.5, "B": true}}`,
			want: Server{Args: []string{"--port", "8080"}, Env: map[string]string{"N": "1.5", "B": "true"}}},
		{name: "env value an object", kind: ClaudeCode, entry: `{"command": "srv", "env": {"A": {"b": 1}}}`,
			want: Server{Command: "srv"}, note: "env.A: want a string, got an object: left out"},
		{name: "streamable-http alias", kind: ClaudeCode, entry: `{"type": "streamable-http", "url": "https://x.example.com/mcp"}`,
			want: Server{Type: "http", URL: "https://x.example.com/mcp"}},
		{name: "url without type is http", kind: ClaudeCode, entry: `{"url": "https://x.example.com/sse"}`,
			want: Server{Type: "http"}},
		{name: "cursor sse by path", kind: Cursor, entry: `{"url": "https://x.example.com/sse/"}`,
			want: Server{Type: "sse"}},
		{name: "unknown transport", kind: ClaudeCode, entry: `{"type": "grpc", "url": "https://x"}`,
			status: skipped, note: `type "grpc" is not a transport toolsift speaks`},
		{name: "stdio without command", kind: ClaudeCode, entry: `{"type": "stdio", "args": ["x"]}`,
			status: skipped, note: "a stdio server without a command"},
		{name: "http without url", kind: VSCode, entry: `{"type": "http", "command": "x"}`,
			status: skipped, note: "a http server without a url"},
		{name: "neither", kind: ClaudeDesktop, entry: `{"env": {"A": "b"}}`,
			status: skipped, note: "neither command nor url"},
		{name: "not an object", kind: ClaudeCode, entry: `"npx server"`,
			status: skipped, note: "want an object with command or url, got a string"},
		{name: "not http", kind: ClaudeCode, entry: `{"url": "ws://x.example.com"}`,
			status: skipped, note: "is not an http(s) URL"},
		{name: "headers on stdio", kind: ClaudeCode, entry: `{"command": "x", "headers": {"A": "b"}}`,
			want: Server{Command: "x"}, note: "headers ignored"},
		{name: "self by name", kind: ClaudeCode, entry: `{"command": "/opt/bin/toolsift.exe", "args": []}`, status: self},
		{name: "self by go run", kind: ClaudeCode, entry: `{"command": "go", "args": ["run", "github.com/toolsift/toolsift@latest"]}`, status: self},
		{name: "desktop literal ${}", kind: ClaudeDesktop, entry: `{"command": "x", "env": {"K": "${KEY}"}}`,
			want: Server{Env: map[string]string{"K": "${KEY}"}}, note: "passed as is by Claude Desktop"},
		{name: "claude code keeps defaults", kind: ClaudeCode, entry: `{"command": "x", "args": ["${A:-b}"]}`,
			want: Server{Args: []string{"${A:-b}"}}},
		{name: "gemini $VAR", kind: Gemini, entry: `{"command": "$HOME/bin/srv", "env": {"T": "a$TOKEN-b", "U": "${USER}"}}`,
			want: Server{Command: "${HOME}/bin/srv", Env: map[string]string{"T": "a${TOKEN}-b", "U": "${USER}"}}},
		{name: "gemini httpUrl wins", kind: Gemini, entry: `{"url": "https://x.example.com/sse", "httpUrl": "https://x.example.com/mcp"}`,
			want: Server{Type: "http", URL: "https://x.example.com/mcp"}},
		{name: "gemini typed url", kind: Gemini, entry: `{"type": "http", "url": "https://x.example.com/mcp"}`,
			want: Server{Type: "http"}},
		{name: "gemini bad timeout", kind: Gemini, entry: `{"command": "x", "timeout": -5}`,
			want: Server{Command: "x"}, note: "timeout: -5 is not a positive time"},
		{name: "bad glob", kind: Gemini, entry: `{"command": "x", "includeTools": ["ok_*", "[bad"]}`,
			want: Server{Allow: []string{"ok_*"}}, note: `allow pattern "[bad" is not a valid glob`},
		{name: "vscode input", kind: VSCode, entry: `{"command": "x", "env": {"K": "${input:api-key}"}}`,
			want: Server{Env: map[string]string{"K": "${API_KEY}"}}, note: "export API_KEY"},
		{name: "vscode odd input id", kind: VSCode, entry: `{"command": "x", "env": {"K": "${input:9.lives}"}}`,
			want: Server{Env: map[string]string{"K": "${INPUT_9_LIVES}"}}},
		{name: "vscode unknown variable", kind: VSCode, entry: `{"command": "x", "args": ["${config:editor.tabSize}", "${file}"]}`,
			want: Server{Args: []string{"${config:editor.tabSize}", "${file}"}}, note: "${file} is not a VS Code variable toolsift knows: toolsift reads it as the environment variable file"},
		{name: "vscode workspace variables", kind: VSCode, project: "/p/app", entry: `{"command": "x", "args": ["${workspaceFolderBasename}", "a${pathSeparator}b", "${/}"]}`,
			want: Server{Args: []string{"app", "a/b", "/"}, Cwd: "/p/app"}},
		{name: "project cwd relative", kind: Gemini, project: "/p/app", entry: `{"command": "x", "cwd": "sub"}`,
			want: Server{Cwd: "/p/app/sub"}},
		{name: "user cwd relative", kind: Gemini, entry: `{"command": "x", "cwd": "sub"}`,
			want: Server{Cwd: "sub"}, note: "is relative"},
		{name: "remote drops stdio keys", kind: ClaudeCode, entry: `{"type": "sse", "url": "https://x.example.com/sse", "args": ["a"], "env": {"A": "b"}}`,
			want: Server{Type: "sse"}, note: "args, env and cwd ignored"},
		{name: "both, typed http", kind: ClaudeCode, entry: `{"type": "http", "command": "x", "url": "https://x.example.com/mcp"}`,
			want: Server{Type: "http", URL: "https://x.example.com/mcp"}, note: "used the url, ignored the command"},
		{name: "unknown keys", kind: ClaudeCode, entry: `{"command": "x", "autoApprove": [], "alwaysAllow": ["a"]}`,
			want: Server{Command: "x"}, note: "ignored, toolsift has no such setting: alwaysAllow, autoApprove"},
		{name: "disabled", kind: Cursor, entry: `{"command": "x", "disabled": true}`,
			want: Server{Disabled: true}, note: "disabled in Cursor: kept with disabled: true"},
		{name: "codex bearer replaces header", kind: Codex, entry: "url = \"https://x.example.com/mcp\"\nbearer_token_env_var = \"TOK\"\nhttp_headers = { authorization = \"Bearer old\" }\n",
			want: Server{Type: "http", Headers: map[string]string{"Authorization": "Bearer ${TOK}"}}},
		{name: "codex startup ms", kind: Codex, entry: "command = \"x\"\nstartup_timeout_ms = 2500\ntool_timeout_sec = 60\n",
			want: Server{StartupTimeout: 2500 * time.Millisecond, CallTimeout: time.Minute}},
		{name: "codex command first", kind: Codex, entry: "command = \"x\"\nurl = \"https://x.example.com/mcp\"\n",
			want: Server{Type: "stdio", Command: "x"}, note: "ignored the url"},
		{name: "codex inline bearer", kind: Codex, entry: "url = \"https://x.example.com/mcp\"\nbearer_token = \"literal\"\n",
			want: Server{Headers: map[string]string{"Authorization": "Bearer literal"}}},
		{name: "opencode local without command", kind: OpenCode, entry: `{"type": "local", "command": []}`,
			status: skipped, note: "a stdio server without a command"},
		{name: "opencode remote sse", kind: OpenCode, entry: `{"type": "remote", "url": "https://x.example.com/sse"}`,
			want: Server{Type: "sse"}},
		{name: "opencode env", kind: OpenCode, entry: `{"type": "local", "command": ["x"], "environment": {"A": "{env:B}", "C": "${D}"}}`,
			want: Server{Env: map[string]string{"A": "${B}", "C": "${D}"}}, note: "${D} is passed as is by opencode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, data := entryFile(tt.kind, tt.entry, tt.project)
			f, err := parseFile(path, data, tt.kind, Options{Home: "/home/me"})
			if err != nil {
				t.Fatalf("parseFile: %v\n%s", err, data)
			}
			ref := f.blocks[0].entries[0]
			if ref.status != tt.status {
				t.Fatalf("status = %v, want %v; warnings %v", ref.status, tt.status, f.imp.Warnings)
			}
			var notes []string
			for _, w := range f.imp.Warnings {
				notes = append(notes, w.Msg)
			}
			if tt.note != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, tt.note) }) {
				t.Errorf("notes = %q, want one containing %q", notes, tt.note)
			}
			if ref.status != imported {
				return
			}
			checkServer(t, ref.server, tt.want)
		})
	}
}

// entryFile makes a client file of kind holding one server, named s, with the given entry.
func entryFile(kind Kind, entry, project string) (string, []byte) {
	dir := "/home/me" // a user-level file
	if project != "" {
		dir = project
	}
	switch kind {
	case Codex:
		return filepath.Join(dir, ".codex", "config.toml"), []byte("[mcp_servers.s]\n" + entry)
	case VSCode:
		return filepath.Join(dir, ".vscode", "mcp.json"), []byte(`{"servers": {"s": ` + entry + `}}`)
	case OpenCode:
		return filepath.Join(dir, "opencode.json"), []byte(`{"mcp": {"s": ` + entry + `}}`)
	case Gemini:
		return filepath.Join(dir, ".gemini", "settings.json"), []byte(`{"mcpServers": {"s": ` + entry + `}}`)
	case Cursor:
		return filepath.Join(dir, ".cursor", "mcp.json"), []byte(`{"mcpServers": {"s": ` + entry + `}}`)
	case ClaudeDesktop:
		return filepath.Join(dir, "claude_desktop_config.json"), []byte(`{"mcpServers": {"s": ` + entry + `}}`)
	}
	if project != "" {
		return filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"s": ` + entry + `}}`)
	}
	return filepath.Join(dir, ".claude.json"), []byte(`{"mcpServers": {"s": ` + entry + `}}`)
}

func checkServer(t *testing.T, got, want Server) {
	t.Helper()
	if want.Type != "" && got.Type != want.Type {
		t.Errorf("Type = %q, want %q", got.Type, want.Type)
	}
	if want.Command != "" && got.Command != want.Command {
		t.Errorf("Command = %q, want %q", got.Command, want.Command)
	}
	if want.Args != nil && !slices.Equal(got.Args, want.Args) {
		t.Errorf("Args = %q, want %q", got.Args, want.Args)
	}
	if want.Env != nil && !maps.Equal(got.Env, want.Env) {
		t.Errorf("Env = %q, want %q", got.Env, want.Env)
	}
	if want.Headers != nil && !maps.Equal(got.Headers, want.Headers) {
		t.Errorf("Headers = %q, want %q", got.Headers, want.Headers)
	}
	if want.URL != "" && got.URL != want.URL {
		t.Errorf("URL = %q, want %q", got.URL, want.URL)
	}
	if want.Cwd != "" && got.Cwd != want.Cwd {
		t.Errorf("Cwd = %q, want %q", got.Cwd, want.Cwd)
	}
	if want.Allow != nil && !slices.Equal(got.Allow, want.Allow) {
		t.Errorf("Allow = %q, want %q", got.Allow, want.Allow)
	}
	if want.Disabled && !got.Disabled {
		t.Errorf("Disabled = false, want true")
	}
	if want.StartupTimeout != 0 && got.StartupTimeout != want.StartupTimeout {
		t.Errorf("StartupTimeout = %v, want %v", got.StartupTimeout, want.StartupTimeout)
	}
	if want.CallTimeout != 0 && got.CallTimeout != want.CallTimeout {
		t.Errorf("CallTimeout = %v, want %v", got.CallTimeout, want.CallTimeout)
	}
}

func TestSanitize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"github", "github"},
		{"brave search", "brave-search"},
		{"@scope/pkg", "scope-pkg"},
		{"github.com/org/repo", "github-com-org-repo"},
		{"  spaced  ", "spaced"},
		{"ünïcode", "n-code"},
		{"", "server"},
		{"!!!", "server"},
		{"-lead", "-lead"},
		{strings.Repeat("a", 41), strings.Repeat("a", 40)},
		{strings.Repeat("a", 39) + ".b", strings.Repeat("a", 39)},
	}
	for _, tt := range tests {
		if got := sanitize(tt.in); got != tt.want {
			t.Errorf("sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := sanitize(tt.in); !validName.MatchString(got) {
			t.Errorf("sanitize(%q) = %q, which is not a valid name", tt.in, got)
		}
	}
	taken := []Server{{Name: "a"}, {Name: "a-2"}, {Name: strings.Repeat("b", 40)}}
	if got := uniqueName("a", taken); got != "a-3" {
		t.Errorf("uniqueName(a) = %q, want a-3", got)
	}
	if got := uniqueName(strings.Repeat("b", 40), taken); got != strings.Repeat("b", 38)+"-2" {
		t.Errorf("uniqueName(b×40) = %q", got)
	}
}

func TestMerge(t *testing.T) {
	srv := func(name, file string, args ...string) Server {
		return Server{Name: name, Key: name, Type: "stdio", Command: "npx", Args: args, Source: Source{Path: file}}
	}
	a := Import{Servers: []Server{srv("github", "a.json", "x")}}
	b := Import{Servers: []Server{srv("github", "b.json", "x"), srv("slack", "b.json")}}
	c := Import{Servers: []Server{srv("github", "c.json", "other")}}
	d := Import{Servers: []Server{srv("github", "d.json", "third")}}
	got := Merge(a, b, c, d)
	var names []string
	for _, s := range got.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"github", "slack", "github-2", "github-3"}; !slices.Equal(names, want) {
		t.Fatalf("names = %q, want %q", names, want)
	}
	if got.Servers[0].Disabled || !got.Servers[2].Disabled || !got.Servers[3].Disabled {
		t.Errorf("Disabled = %v %v %v, want the renamed ones disabled", got.Servers[0].Disabled, got.Servers[2].Disabled, got.Servers[3].Disabled)
	}
	if len(got.Warnings) != 3 || !strings.Contains(got.Warnings[0].Msg, "imported once") || !strings.Contains(got.Warnings[1].Msg, `imported as "github-2", disabled`) {
		t.Errorf("warnings = %v", got.Warnings)
	}
}

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"claude": ClaudeCode, "Claude-Code": ClaudeCode, "desktop": ClaudeDesktop, "code": VSCode, "gemini-cli": Gemini, "codex": Codex, "opencode": OpenCode, "cursor": Cursor} {
		if got, err := ParseKind(in); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseKind("emacs"); err == nil || !strings.Contains(err.Error(), "known: claude-code, claude-desktop") {
		t.Errorf("ParseKind(emacs) = %v", err)
	}
}

func TestFind(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "src", "app")
	files := map[string]string{
		".claude.json": `{}`,
		".config/Claude/claude_desktop_config.json": `{}`,
		".cursor/mcp.json":                          `{}`,
		".codex/config.toml":                        ``,
		".config/opencode/opencode.json":            `{}`,
		"src/app/.mcp.json":                         `{}`,
		"src/app/.vscode/mcp.json":                  `{}`,
		"src/app/.gemini/settings.json":             `{}`,
		"src/app/opencode.jsonc":                    `{}`,
		"src/app/.cursor":                           "", // a directory named like the file, not a file
	}
	for rel, content := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if rel == "src/app/.cursor" {
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(project, ".cursor", "mcp.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range Find(home, project) {
		rel, _ := filepath.Rel(home, s.Path)
		proj, _ := filepath.Rel(home, s.Project)
		if s.Project == "" {
			proj = "-"
		}
		got = append(got, string(s.Kind)+" "+rel+" "+proj)
	}
	want := []string{
		"claude-code .claude.json -",
		"claude-code src/app/.mcp.json src/app",
		"claude-desktop .config/Claude/claude_desktop_config.json -",
		"cursor .cursor/mcp.json -",
		"vscode src/app/.vscode/mcp.json src/app",
		"gemini src/app/.gemini/settings.json src/app",
		"codex .codex/config.toml -",
		"opencode .config/opencode/opencode.json -",
		"opencode src/app/opencode.jsonc src/app",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Find =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// In the home directory, the user's files are not read twice as a project's.
	var inHome []string
	for _, s := range Find(home, home) {
		inHome = append(inHome, s.Path)
	}
	if n := len(inHome); n != 5 {
		t.Errorf("Find(home, home) = %q, want the 5 user files", inHome)
	}
	if got := Find("", ""); len(got) != 0 {
		t.Errorf("Find(\"\", \"\") = %v", got)
	}
}

func TestDefaultFile(t *testing.T) {
	home := t.TempDir()
	cwd := filepath.Join(home, "p")
	if got, want := DefaultFile(ClaudeCode, home, cwd), filepath.Join(home, ".claude.json"); got != want {
		t.Errorf("DefaultFile(claude-code) = %q, want %q", got, want)
	}
	if got, want := DefaultFile(Codex, home, cwd), filepath.Join(home, ".codex", "config.toml"); got != want {
		t.Errorf("DefaultFile(codex) = %q, want %q", got, want)
	}
	// VS Code: the workspace's file only when there is no user one.
	ws := filepath.Join(cwd, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(ws), 0o755)
	os.WriteFile(ws, []byte(`{}`), 0o644)
	if got := DefaultFile(VSCode, home, cwd); got != ws {
		t.Errorf("DefaultFile(vscode) = %q, want the workspace's %q", got, ws)
	}
	user := filepath.Join(home, "Library", "Application Support", "Code", "User", "mcp.json")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte(`{}`), 0o644)
	if got := DefaultFile(VSCode, home, cwd); got != user {
		t.Errorf("DefaultFile(vscode) = %q, want the existing user file %q", got, user)
	}
}

// TestClaudeApprovals: a project's .mcp.json server is imported enabled only if Claude Code
// would start it: approved one by one or all at once, and not disabled anywhere.
func TestClaudeApprovals(t *testing.T) {
	tests := []struct {
		name     string
		home     map[string]string // files under the home directory
		project  map[string]string // files under the project
		named    bool              // the user named the file to import
		disabled bool
	}{
		{"nothing recorded: pending approval", nil, nil, false, true},
		{"nothing recorded, but the file was named", nil, nil, true, false},
		{"disabled, and the file was named", nil, map[string]string{".claude/settings.local.json": `{"disabledMcpjsonServers": ["db"]}`}, true, true},
		{"approved in local settings", nil, map[string]string{".claude/settings.local.json": `{"enabledMcpjsonServers": ["db"]}`}, false, false},
		{"approved in ~/.claude.json's project", map[string]string{".claude.json": `{"projects": {"PROJECT": {"enabledMcpjsonServers": ["db"]}}}`}, nil, false, false},
		{"another project's approval", map[string]string{".claude.json": `{"projects": {"/elsewhere": {"enabledMcpjsonServers": ["db"]}}}`}, nil, false, true},
		{"all approved in user settings", map[string]string{".claude/settings.json": `{"enableAllProjectMcpServers": true}`}, nil, false, false},
		{"all approved, but this one disabled", map[string]string{".claude/settings.json": `{"enableAllProjectMcpServers": true}`},
			map[string]string{".claude/settings.json": `{"disabledMcpjsonServers": ["db"]}`}, false, true},
		{"approved and disabled: disabled wins", map[string]string{".claude.json": `{"projects": {"PROJECT": {"enabledMcpjsonServers": ["db"], "disabledMcpjsonServers": ["db"]}}}`}, nil, false, true},
		{"enableAll written as a string", map[string]string{".claude/settings.json": `{"enableAllProjectMcpServers": "true"}`}, nil, false, true},
		{"a damaged settings file adds nothing", nil, map[string]string{".claude/settings.local.json": `{"enabledMcpjsonServers": ["db"`}, false, true},
		{"a name that only differs in case", nil, map[string]string{".claude/settings.local.json": `{"enabledMcpjsonServers": ["DB"]}`}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, project := t.TempDir(), t.TempDir()
			write := func(dir string, files map[string]string) {
				for name, text := range files {
					p := filepath.Join(dir, name)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "PROJECT", project)), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			write(home, tt.home)
			write(project, tt.project)
			write(project, map[string]string{".mcp.json": `{"mcpServers": {"db": {"command": "db-mcp"}}}`})
			imp, err := Read(filepath.Join(project, ".mcp.json"), "", Options{Home: home, Dir: project, Named: tt.named})
			if err != nil || len(imp.Servers) != 1 {
				t.Fatalf("Read = %+v, %v", imp.Servers, err)
			}
			if got := imp.Servers[0].Disabled; got != tt.disabled {
				t.Errorf("disabled = %v, want %v (notes %q)", got, tt.disabled, imp.Servers[0].Notes)
			}
		})
	}
}
