package clients

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// stateOpts are testOpts with a state folder of the test's own.
func stateOpts(t *testing.T) Options {
	o := testOpts
	o.State = t.TempDir()
	return o
}

var testEntry = Entry{Command: "/usr/local/bin/toolsift", Args: []string{"--config", "/home/me/.config/toolsift/config.yaml"}}

// copySample copies a sample client file into a temporary directory, keeping the part of
// its path that tells its client, with an unusual mode to see that it is kept.
func copySample(t *testing.T, sample string) string {
	t.Helper()
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	rel := filepath.Base(sample)
	if parent := filepath.Base(filepath.Dir(sample)); strings.HasPrefix(parent, ".") || parent == "User" {
		rel = filepath.Join(parent, rel)
	}
	path := filepath.Join(t.TempDir(), rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSetupRoundTrip switches every sample over to toolsift and back: the rewrite matches
// its golden file, keeps every other key in its order and the file's mode, and the undo
// gives back the original byte for byte.
func TestSetupRoundTrip(t *testing.T) {
	opts := stateOpts(t)
	tests := []struct {
		name, sample string
		kept         []string // entries left in the client
	}{
		{"claude-code-user", "testdata/claude-code/.claude.json", nil},
		{"claude-code-project", "testdata/claude-code/.mcp.json", []string{"realtime", "half-written"}},
		{"claude-desktop", "testdata/claude-desktop/claude_desktop_config.json", nil},
		{"cursor", "testdata/cursor/.cursor/mcp.json", nil},
		{"vscode", "testdata/vscode/.vscode/mcp.json", []string{"websocket"}},
		{"vscode-settings", "testdata/vscode/User/settings.json", nil},
		{"gemini", "testdata/gemini/.gemini/settings.json", nil},
		{"codex", "testdata/codex/config.toml", nil},
		{"opencode", "testdata/opencode/opencode.jsonc", nil},
		{"opencode-v2", "testdata/opencode/opencode.v2.json", nil},
		{"copilot", "testdata/copilot/.copilot/mcp-config.json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := copySample(t, tt.sample)
			orig, _ := os.ReadFile(path)
			before, err := Read(path, "", testOpts)
			if err != nil {
				t.Fatal(err)
			}

			c, err := PlanSetup(path, "", testEntry, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Kept, tt.kept) {
				t.Errorf("Kept = %q, want %q", c.Kept, tt.kept)
			}
			// Every server import reads is moved (~/.claude.json has one twice: it moves both).
			for _, s := range before.Servers {
				if !slices.ContainsFunc(c.Moved, func(m Server) bool { return m.Name == s.Name }) {
					t.Errorf("%s is imported but not moved", s.Name)
				}
			}
			if err := c.Apply(); err != nil {
				t.Fatal(err)
			}
			switched, _ := os.ReadFile(path)
			golden(t, "setup/"+tt.name+filepath.Ext(path), switched)
			if bak, err := os.ReadFile(BackupPath(opts.State, path)); err != nil || !bytes.Equal(bak, orig) {
				t.Errorf("backup = %v, want the original", err)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
				t.Errorf("%s: mode %v, %v; want 0640, as it was", path, st.Mode(), err)
			}
			// The backup is kept in the state folder, readable by the user alone.
			if st, err := os.Stat(BackupPath(opts.State, path)); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("backup: mode %v, %v; want 0600", st.Mode(), err)
			}
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*toolsift*")); len(left) > 0 {
				t.Errorf("setup left files beside the client's: %v", left)
			}
			after, err := Read(path, "", testOpts)
			if err != nil {
				t.Fatalf("the switched file does not read: %v", err)
			}
			if len(after.Servers) != 0 {
				t.Errorf("after setup, import still reads %d servers", len(after.Servers))
			}
			checkUnrelated(t, orig, switched)

			u, err := PlanUndo(path, "", opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			restored, _ := os.ReadFile(path)
			if !bytes.Equal(restored, orig) {
				t.Errorf("undo did not restore the file byte for byte:\n%s", restored)
			}
			if _, err := os.Stat(BackupPath(opts.State, path)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("backup still there after undo: %v", err)
			}
		})
	}
}

// checkUnrelated checks that the keys at the top of a JSON file kept their order and, all
// but the servers, their text.
func checkUnrelated(t *testing.T, old, new []byte) {
	t.Helper()
	if bytes.HasPrefix(bytes.TrimSpace(old), []byte("#")) || !bytes.Contains(old, []byte("{")) {
		return // TOML: sameOutside compared the values already
	}
	a, err := parseJSONC("old", old)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseJSONC("new", new)
	if err != nil {
		t.Fatal(err)
	}
	keys := func(n *jnode) []string {
		var k []string
		for _, m := range n.members {
			k = append(k, m.key)
		}
		return k
	}
	if !slices.Equal(keys(a.root), keys(b.root)) {
		t.Errorf("top-level keys %q became %q", keys(a.root), keys(b.root))
	}
	servers := map[string]bool{"mcpServers": true, "servers": true, "mcp": true, "projects": true}
	for i, m := range a.root.members {
		if servers[m.key] {
			continue
		}
		n := b.root.members[i]
		if got, want := string(new[n.value.start:n.value.end]), string(old[m.value.start:m.value.end]); got != want {
			t.Errorf("%s: %s became %s", m.key, want, got)
		}
	}
	// ~/.claude.json: everything of each project but its servers unchanged.
	if p := a.root.get("projects"); p != nil {
		for _, m := range p.members {
			oldP, newP := m.value.value().(map[string]any), b.root.lookup("projects", m.key).value().(map[string]any)
			delete(oldP, "mcpServers")
			delete(newP, "mcpServers")
			if !reflect.DeepEqual(oldP, newP) {
				t.Errorf("project %s changed: %v became %v", m.key, oldP, newP)
			}
		}
	}
}

func TestSetupTwice(t *testing.T) {
	opts := stateOpts(t)
	path := copySample(t, "testdata/claude-desktop/claude_desktop_config.json")
	orig, _ := os.ReadFile(path)
	c, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	again, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing to do, and no note that says otherwise (setup itself says "Already switched").
	if again.Changed() || len(again.Moved) != 0 || len(again.Notes) != 0 {
		t.Errorf("second setup: Changed %v, Moved %v, Notes %q; want nothing to do", again.Changed(), again.Moved, again.Notes)
	}
	// A new config path rewrites the entry but keeps the original backup.
	moved := testEntry
	moved.Args = []string{"--config", "/elsewhere/toolsift.yaml"}
	third, err := PlanSetup(path, "", moved, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Changed() || !strings.Contains(strings.Join(third.Notes, "\n"), "already switched to toolsift: its entry is updated") {
		t.Errorf("third setup: Changed %v, Notes %q", third.Changed(), third.Notes)
	}
	if err := third.Apply(); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); !bytes.Contains(now, []byte("/elsewhere/toolsift.yaml")) {
		t.Errorf("entry not rewritten:\n%s", now)
	}
	u, err := PlanUndo(path, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Apply(); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Errorf("undo after two setups:\n%s", now)
	}
}

func TestSetupStaleBackup(t *testing.T) {
	opts := stateOpts(t)
	path := copySample(t, "testdata/cursor/.cursor/mcp.json")
	os.WriteFile(path+legacySuffix, []byte(`{"old": true}`), 0o600)
	_, err := PlanSetup(path, "", testEntry, opts)
	if !errors.Is(err, ErrStaleBackup) {
		t.Fatalf("PlanSetup = %v, want ErrStaleBackup", err)
	}
	if bak, _ := os.ReadFile(path + legacySuffix); string(bak) != `{"old": true}` {
		t.Errorf("backup changed: %s", bak)
	}
}

// TestSetupNewFile switches a client that has no configuration yet: the file is created,
// and undo without a backup takes toolsift's entry out.
func TestSetupNewFile(t *testing.T) {
	opts := stateOpts(t)
	for _, name := range []string{".cursor/mcp.json", ".codex/config.toml", ".vscode/mcp.json", "opencode.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			c, err := PlanSetup(path, "", testEntry, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Apply(); err != nil {
				t.Fatal(err)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("new file: %v, %v", st, err)
			}
			if _, err := os.Stat(BackupPath(opts.State, path)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a backup of nothing was written: %v", err)
			}
			data, _ := os.ReadFile(path)
			golden(t, "setup/new-"+strings.ReplaceAll(strings.TrimPrefix(name, "."), "/", "-"), data)
			u, err := PlanUndo(path, "", opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Apply(); err != nil {
				t.Fatal(err)
			}
			data, _ = os.ReadFile(path)
			if bytes.Contains(data, []byte("toolsift")) {
				t.Errorf("undo left toolsift's entry:\n%s", data)
			}
			if _, err := PlanUndo(path, "", opts); !errors.Is(err, ErrNothingToUndo) {
				t.Errorf("second undo = %v, want ErrNothingToUndo", err)
			}
		})
	}
}

// TestUndoAfterChanges undoes a setup after the client rewrote its file (Claude Code saves
// its state in ~/.claude.json): toolsift's entry goes, the servers come back, and the
// client's changes stay.
func TestUndoAfterChanges(t *testing.T) {
	opts := stateOpts(t)
	tests := []struct {
		sample, find, replace string
		want                  []string
	}{
		{"testdata/claude-code/.claude.json", `"numStartups": 184`, `"numStartups": 185`,
			[]string{`"numStartups": 185`, `"memory": {`, `"postgres": {`, `"hugo-docs": {`}},
		{"testdata/claude-code/.claude.json", `"mcpServers": {
    "toolsift"`, `"mcpServers": {
    "added": {"command": "later"},
    "toolsift"`,
			[]string{`"added": {"command": "later"}`, `"github": {`}},
		{"testdata/codex/config.toml", `model = "gpt-5-codex"`, `model = "gpt-6"`,
			[]string{`model = "gpt-6"`, "[mcp_servers.context7]", "[mcp_servers.context7.env]", `[mcp_servers."shell server"]`, "# Docs lookups."}},
	}
	for _, tt := range tests {
		path := copySample(t, tt.sample)
		c, err := PlanSetup(path, "", testEntry, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if !bytes.Contains(data, []byte(tt.find)) {
			t.Fatalf("%q not in the switched file:\n%s", tt.find, data)
		}
		os.WriteFile(path, bytes.Replace(data, []byte(tt.find), []byte(tt.replace), 1), 0o640)
		u, err := PlanUndo(path, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Apply(); err != nil {
			t.Fatal(err)
		}
		data, _ = os.ReadFile(path)
		for _, w := range tt.want {
			if !bytes.Contains(data, []byte(w)) {
				t.Errorf("%s: after undo, %q is missing:\n%s", tt.sample, w, data)
			}
		}
		imp, err := Read(path, "", testOpts)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range imp.Warnings {
			if strings.Contains(w.Msg, "toolsift itself") {
				t.Errorf("%s: toolsift's entry is still there", tt.sample)
			}
		}
	}
}

// TestUndoWithoutBackup takes out toolsift's entry from a file that was switched by hand,
// and nothing else.
func TestUndoWithoutBackup(t *testing.T) {
	opts := stateOpts(t)
	for _, tt := range []struct{ name, src, want string }{
		{".mcp.json", `{"mcpServers": {"a": {"command": "x"}, "toolsift": {"command": "toolsift"}, "b": {"type": "ws"}}}`,
			"{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"b\": {\"type\": \"ws\"}\n}}"},
		{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.toolsift]\ncommand = \"toolsift\"\n",
			"[mcp_servers.a]\ncommand = \"x\"\n\n"},
	} {
		path := filepath.Join(t.TempDir(), tt.name)
		os.WriteFile(path, []byte(tt.src), 0o600)
		u, err := PlanUndo(path, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		if string(u.New) != tt.want {
			t.Errorf("%s: New =\n%s\nwant\n%s", tt.name, u.New, tt.want)
		}
	}
}

func TestApplyRefusesChangedFile(t *testing.T) {
	opts := stateOpts(t)
	path := copySample(t, "testdata/gemini/.gemini/settings.json")
	c, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(`{"theme": "changed meanwhile"}`), 0o640)
	if err := c.Apply(); !errors.Is(err, ErrChanged) {
		t.Fatalf("Apply = %v, want ErrChanged", err)
	}
	if _, err := os.Stat(BackupPath(opts.State, path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup written for a change that was refused")
	}
}

func TestSetupThroughSymlink(t *testing.T) {
	opts := stateOpts(t)
	target := copySample(t, "testdata/claude-desktop/claude_desktop_config.json")
	link := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	c, err := PlanSetup(link, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file: %v %v", st.Mode(), err)
	}
	if data, _ := os.ReadFile(target); !bytes.Contains(data, []byte(`"toolsift"`)) {
		t.Errorf("target not switched:\n%s", data)
	}
}

func TestSetupInlineTOML(t *testing.T) {
	opts := stateOpts(t)
	path := filepath.Join(t.TempDir(), "config.toml")
	os.WriteFile(path, []byte("mcp_servers = { a = { command = \"x\" } }\n"), 0o600)
	if imp, err := Read(path, "", testOpts); err != nil || len(imp.Servers) != 1 {
		t.Fatalf("Read = %v, %v; want the inline server", imp.Servers, err)
	}
	_, err := PlanSetup(path, "", testEntry, opts)
	if err == nil || !strings.Contains(err.Error(), "write each server as a [mcp_servers.NAME] table") {
		t.Errorf("PlanSetup = %v", err)
	}
}

// TestSetupTOMLShapes moves servers written as dotted keys and inline tables.
func TestSetupTOMLShapes(t *testing.T) {
	opts := stateOpts(t)
	tests := []struct{ src, want string }{
		{`model = "m"

[mcp_servers]
a.command = "x"
a.args = [
  "one",
  "two",
]
b = { command = "y" } # inline, with a comment

[mcp_servers.c]
url = "wss://not-http.example.com"

[other]
key = 1
`, `model = "m"

[mcp_servers]
[mcp_servers.c]
url = "wss://not-http.example.com"

[other]
key = 1

[mcp_servers.toolsift]
command = "/usr/local/bin/toolsift"
args = ["--config", "/home/me/.config/toolsift/config.yaml"]
`},
		{`mcp_servers.a.command = "x"
mcp_servers.b.url = "wss://kept.example.com"
model = "m"
`, `mcp_servers.b.url = "wss://kept.example.com"
model = "m"

[mcp_servers.toolsift]
command = "/usr/local/bin/toolsift"
args = ["--config", "/home/me/.config/toolsift/config.yaml"]
`},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "config.toml")
		os.WriteFile(path, []byte(tt.src), 0o600)
		c, err := PlanSetup(path, "", testEntry, opts)
		if err != nil {
			t.Fatal(err)
		}
		if string(c.New) != tt.want {
			t.Errorf("New =\n%s\nwant\n%s", c.New, tt.want)
		}
	}
}

// TestSetupJSONEdges covers JSON layouts: tabs, a missing servers key, trailing commas,
// comments around the servers.
func TestSetupJSONEdges(t *testing.T) {
	opts := stateOpts(t)
	tests := []struct {
		name, file, src, want string
		lostComments          bool
	}{
		{"tabs", ".cursor/mcp.json", "{\n\t\"mcpServers\": {\n\t\t\"a\": {\"command\": \"x\"}\n\t}\n}\n",
			"{\n\t\"mcpServers\": {\n\t\t\"toolsift\": {\n\t\t\t\"command\": \"/t\",\n\t\t\t\"args\": [\"--config\", \"/c\"]\n\t\t}\n\t}\n}\n", false},
		{"no servers key", ".gemini/settings.json", "{\n  \"theme\": \"x\",\n}\n",
			"{\n  \"theme\": \"x\",\n  \"mcpServers\": {\n    \"toolsift\": {\n      \"command\": \"/t\",\n      \"args\": [\"--config\", \"/c\"]\n    }\n  },\n}\n", false},
		{"empty object", ".cursor/mcp.json", "{}",
			"{\n  \"mcpServers\": {\n    \"toolsift\": {\n      \"command\": \"/t\",\n      \"args\": [\"--config\", \"/c\"]\n    }\n  }\n}", false},
		{"vscode settings without mcp", "User/settings.json", "{\n  // editor\n  \"editor.fontSize\": 14\n}\n",
			"{\n  // editor\n  \"editor.fontSize\": 14,\n  \"mcp\": {\n    \"servers\": {\n      \"toolsift\": {\n        \"type\": \"stdio\",\n        \"command\": \"/t\",\n        \"args\": [\"--config\", \"/c\"]\n      }\n    }\n  }\n}\n", false},
		{"comments inside", ".vscode/mcp.json", "// top\n{\"servers\": {\n  // gone\n  \"a\": {\"command\": \"x\"}, /* kept? no */\n}} // end\n",
			"// top\n{\"servers\": {\n  \"toolsift\": {\n    \"type\": \"stdio\",\n    \"command\": \"/t\",\n    \"args\": [\"--config\", \"/c\"]\n  }\n}} // end\n", true},
		{"comment inside a kept entry", ".vscode/mcp.json", "{\"servers\": {\n  \"w\": {\"type\": \"ws\" /* kept */, \"url\": \"ws://x\"}\n}}\n",
			"{\"servers\": {\n  \"w\": {\"type\": \"ws\" /* kept */, \"url\": \"ws://x\"},\n  \"toolsift\": {\n    \"type\": \"stdio\",\n    \"command\": \"/t\",\n    \"args\": [\"--config\", \"/c\"]\n  }\n}}\n", false},
		{"opencode", "opencode.json", "{\"mcp\": {\"a\": {\"type\": \"local\", \"command\": [\"x\"]}}}",
			"{\"mcp\": {\n  \"toolsift\": {\n    \"type\": \"local\",\n    \"command\": [\"/t\", \"--config\", \"/c\"]\n  }\n}}", false},
	}
	e := Entry{Command: "/t", Args: []string{"--config", "/c"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tt.file)
			os.MkdirAll(filepath.Dir(path), 0o755)
			os.WriteFile(path, []byte(tt.src), 0o600)
			c, err := PlanSetup(path, "", e, opts)
			if err != nil {
				t.Fatal(err)
			}
			if string(c.New) != tt.want {
				t.Errorf("New =\n%s\nwant\n%s", c.New, tt.want)
			}
			lost := strings.Contains(strings.Join(c.Notes, "\n"), "comments inside")
			if lost != tt.lostComments {
				t.Errorf("notes %q: lost comments %v, want %v", c.Notes, lost, tt.lostComments)
			}
		})
	}
}

// TestSetupAgainKeepsLaterServers: a server added to the client after setup, and moved by
// a second setup, is put back by undo (issue 23, row 6).
func TestSetupAgainKeepsLaterServers(t *testing.T) {
	opts := stateOpts(t)
	path := filepath.Join(t.TempDir(), ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "a-mcp"}}}`), 0o600)
	apply := func(c *Change, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
	}
	apply(PlanSetup(path, "", testEntry, opts))
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(`"mcpServers": {`), []byte(`"mcpServers": {"github": {"command": "gh-mcp", "env": {"T": "x"}},`), 1)
	os.WriteFile(path, data, 0o600)
	c, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Moved) != 1 || c.Moved[0].Name != "github" || !c.Changed() {
		t.Fatalf("second setup moves %v (changed %v), want github", c.Moved, c.Changed())
	}
	apply(c, nil)
	if now, _ := os.ReadFile(path); bytes.Contains(now, []byte("gh-mcp")) {
		t.Fatalf("github still in the client after the second setup:\n%s", now)
	}
	apply(PlanUndo(path, "", opts))
	now, _ := os.ReadFile(path)
	for _, want := range []string{`"a": {"command": "a-mcp"}`, `"github": {"command": "gh-mcp", "env": {"T": "x"}}`} {
		if !bytes.Contains(now, []byte(want)) {
			t.Errorf("after undo, %s is missing:\n%s", want, now)
		}
	}
	if bytes.Contains(now, []byte("toolsift")) {
		t.Errorf("after undo, toolsift's entry is left:\n%s", now)
	}
	if _, err := os.Stat(stateDir(opts.State, path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("setup's state is left after undo: %v", err)
	}
}

// TestDamagedBackupIsIgnored: a backup cut short (a setup killed while writing it) is never
// restored or parsed; undo puts the servers back from setup's record (issue 23, row 9).
func TestDamagedBackupIsIgnored(t *testing.T) {
	opts := stateOpts(t)
	path := copySample(t, "testdata/claude-desktop/claude_desktop_config.json")
	orig, _ := os.ReadFile(path)
	c, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	bak := BackupPath(opts.State, path)
	os.WriteFile(bak, orig[:len(orig)/3], 0o600)
	again, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatalf("setup after a damaged backup: %v", err)
	}
	if notes := strings.Join(again.Notes, "\n"); !strings.Contains(notes, "incomplete or damaged") {
		t.Errorf("no note of the damaged backup: %q", notes)
	}
	u, err := PlanUndo(path, "", opts)
	if err != nil {
		t.Fatalf("undo after a damaged backup: %v", err)
	}
	if err := u.Apply(); err != nil {
		t.Fatal(err)
	}
	before, _ := Read(copySample(t, "testdata/claude-desktop/claude_desktop_config.json"), "", testOpts)
	after, err := Read(path, "", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Servers) != len(before.Servers) {
		t.Errorf("undo put back %d servers, want %d", len(after.Servers), len(before.Servers))
	}
}

// TestLegacyBackups: a backup beside the file, from an earlier version, is still restored;
// the next setup moves it to the state folder; one cut short is ignored, not parsed into an
// error.
func TestLegacyBackups(t *testing.T) {
	t.Run("moved to the state folder", func(t *testing.T) {
		opts := stateOpts(t)
		path := copySample(t, "testdata/cursor/.cursor/mcp.json")
		orig, _ := os.ReadFile(path)
		sw, err := switchedData(path, orig, "", testEntry, opts)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path+legacySuffix, orig, 0o600)
		os.WriteFile(path, sw, 0o600)
		c, err := PlanSetup(path, "", testEntry, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(path + legacySuffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the old backup is still beside the file: %v", err)
		}
		u, err := PlanUndo(path, "", opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := u.Apply(); err != nil {
			t.Fatal(err)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
			t.Errorf("undo did not restore the original:\n%s", now)
		}
	})
	t.Run("cut short", func(t *testing.T) {
		opts := stateOpts(t)
		path := filepath.Join(t.TempDir(), ".mcp.json")
		os.WriteFile(path, []byte(`{"mcpServers": {"toolsift": {"command": "/t"}}}`), 0o600)
		os.WriteFile(path+legacySuffix, []byte(`{"mcpServers": {"a": {"comm`), 0o600)
		u, err := PlanUndo(path, "", opts)
		if err != nil {
			t.Fatalf("undo with a truncated old backup: %v", err)
		}
		if notes := strings.Join(u.Notes, "\n"); !strings.Contains(notes, "incomplete or damaged") {
			t.Errorf("no note of the truncated backup: %q", notes)
		}
		if bytes.Contains(u.New, []byte("toolsift")) {
			t.Errorf("undo left toolsift's entry:\n%s", u.New)
		}
	})
}

// TestUndoKeepsComments: comments the user wrote inside the servers block after setup stay
// after undo (issue 23, row 10).
func TestUndoKeepsComments(t *testing.T) {
	opts := stateOpts(t)
	path := filepath.Join(t.TempDir(), ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("{\n  \"servers\": {\n    \"a\": {\"command\": \"a-mcp\"}\n  }\n}\n"), 0o600)
	c, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(`"servers": {`), []byte("\"servers\": {\n    // my notes: keep these\n    \"mine\": {\"command\": \"m\"}, /* inline */"), 1)
	data = bytes.Replace(data, []byte("    }\n  }\n}"), []byte("    }\n    // at the end\n  }\n}"), 1)
	os.WriteFile(path, data, 0o600)
	u, err := PlanUndo(path, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"// my notes: keep these", "/* inline */", "// at the end", `"mine": {"command": "m"}`, `"a": {"command": "a-mcp"}`} {
		if !bytes.Contains(u.New, []byte(want)) {
			t.Errorf("undo lost %q:\n%s", want, u.New)
		}
	}
	if _, err := parseJSONC(path, u.New); err != nil {
		t.Errorf("undo wrote invalid JSONC: %v\n%s", err, u.New)
	}
	if bytes.Contains(u.New, []byte(`"toolsift"`)) {
		t.Errorf("undo left toolsift's entry:\n%s", u.New)
	}
}

// TestSetupThroughDanglingSymlink: a link whose file does not exist yet stays a link.
func TestSetupThroughDanglingSymlink(t *testing.T) {
	opts := stateOpts(t)
	dir := t.TempDir()
	link := filepath.Join(dir, ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(link), 0o700)
	target := filepath.Join(dir, "dotfiles", "cursor-mcp.json")
	os.MkdirAll(filepath.Dir(target), 0o700)
	if err := os.Symlink(target, link); err != nil {
		t.Skip(err)
	}
	c, err := PlanSetup(link, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if data, err := os.ReadFile(target); err != nil || !bytes.Contains(data, []byte(`"toolsift"`)) {
		t.Errorf("the link's file: %v\n%s", err, data)
	}
}

// TestReadBeforeSetup reads a switched client file as it was: the servers setup moved,
// those of a later run too, and not toolsift's own entry; the file itself is not touched.
func TestReadBeforeSetup(t *testing.T) {
	opts := stateOpts(t)
	path := filepath.Join(t.TempDir(), ".cursor", "mcp.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "a-mcp"}}}`), 0o600)
	names := func(imp Import) string {
		var n []string
		for _, s := range imp.Servers {
			n = append(n, s.Name)
		}
		return strings.Join(n, ",")
	}
	if imp, switched, err := ReadBeforeSetup(path, "", opts); err != nil || switched || names(imp) != "a" {
		t.Fatalf("before any setup: %q switched %v, %v", names(imp), switched, err)
	}
	c, err := PlanSetup(path, "", testEntry, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(); err != nil {
		t.Fatal(err)
	}
	// A server added to the client after the switch is read too, beside those moved.
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(`"mcpServers": {`), []byte(`"mcpServers": {"b": {"command": "b-mcp"},`), 1)
	os.WriteFile(path, data, 0o600)
	switchedFile, _ := os.ReadFile(path)
	imp, switched, err := ReadBeforeSetup(path, "", opts)
	if err != nil || !switched || names(imp) != "b,a" && names(imp) != "a,b" {
		t.Fatalf("after setup: %q switched %v, %v; want a and b", names(imp), switched, err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, switchedFile) {
		t.Errorf("reading changed the file:\n%s", now)
	}
	// Without a state folder there is no record to read: only what the file holds.
	plain := opts
	plain.State = ""
	if imp, switched, err := ReadBeforeSetup(path, "", plain); err != nil || switched || names(imp) != "b" {
		t.Errorf("without state: %q switched %v, %v", names(imp), switched, err)
	}
}
