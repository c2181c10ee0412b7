package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/config"
)

// fakeUser makes a home directory with a few clients configured and a project to work in,
// points HOME and XDG_CONFIG_HOME at it and changes into the project. It returns the home
// and project directories.
func fakeUser(t *testing.T) (home, project string) {
	t.Helper()
	home = t.TempDir()
	project = filepath.Join(home, "src", "app")
	files := map[string]string{
		".claude.json": `{
  "numStartups": 3,
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
  },
  "projects": {"` + project + `": {"mcpServers": {"postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/app"]}}, "allowedTools": []}}
}
`,
		".cursor/mcp.json":   `{"mcpServers": {"context7": {"url": "https://mcp.context7.com/mcp", "headers": {"KEY": "${env:CONTEXT7_KEY}"}}, "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}`,
		".codex/config.toml": "model = \"gpt-5-codex\"\n\n[mcp_servers.figma]\nurl = \"https://mcp.figma.com/mcp\"\nbearer_token_env_var = \"FIGMA_TOKEN\"\n",
		"src/app/.vscode/mcp.json": `{
  // workspace servers
  "inputs": [{"type": "promptString", "id": "api-key", "password": true}],
  "servers": {"search": {"type": "stdio", "command": "uvx", "args": ["search-mcp"], "env": {"KEY": "${input:api-key}"}}},
}`,
	}
	for rel, content := range files {
		p := filepath.Join(home, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	t.Chdir(project)
	return home, project
}

// anyEnv lets every ${VAR} expand, to check a configuration's shape without its secrets.
func anyEnv(string) (string, bool) { return "", true }

func TestImportCmd(t *testing.T) {
	home, _ := fakeUser(t)
	var stdout, stderr bytes.Buffer
	if err := importCmd(context.Background(), nil, &stdout, &stderr); err != nil {
		t.Fatalf("import: %v\nstderr: %s", err, stderr.String())
	}
	cfg, err := config.Parse("stdout", stdout.Bytes(), anyEnv)
	if err != nil {
		t.Fatalf("the output does not load: %v\n%s", err, stdout.String())
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), "github memory context7 figma"; got != want {
		t.Errorf("servers of every folder = %s, want %s", got, want)
	}
	// The project's servers, from ~/.claude.json's entry for it and its .vscode/mcp.json, are
	// served only there.
	names = nil
	for _, s := range cfg.ForProject(filepath.Join(home, "src", "app")).Servers {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), "github memory context7 figma postgres search"; got != want {
		t.Errorf("servers in the project = %s, want %s", got, want)
	}
	for _, want := range []string{
		"toolsift: read ~/.claude.json (claude-code): 3 servers",
		"toolsift: read ~/.cursor/mcp.json (cursor): 1 server",
		"toolsift: read ~/src/app/.vscode/mcp.json (vscode): 1 server",
		"toolsift: read ~/.codex/config.toml (codex): 1 server",
		`~/.cursor/mcp.json: server "memory": same as "memory" from ~/.claude.json: imported once`,
		`server "search": ${input:api-key} is a prompt`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, home) {
			t.Errorf("a comment names the home directory instead of ~: %s", line)
		}
	}

	// -o writes the file, once.
	out := filepath.Join(home, ".config", "toolsift", "config.yaml")
	stderr.Reset()
	if err := importCmd(context.Background(), []string{"-o", out}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("-o file: %v, %v", st, err)
	}
	if _, err := config.Load(out, anyEnv); err != nil {
		t.Errorf("written config does not load: %v", err)
	}
	if !strings.Contains(stderr.String(), "wrote 6 servers to "+out) {
		t.Errorf("stderr = %s", stderr.String())
	}
	err = importCmd(context.Background(), []string{"-o", out}, &stdout, &stderr)
	if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "pass --merge to add the servers it lacks, --force to replace it") {
		t.Errorf("second -o = %v, want a usage error", err)
	}
	if err := importCmd(context.Background(), []string{"--force", "-o", out}, &stdout, &stderr); err != nil {
		t.Errorf("--force: %v", err)
	}
}

func TestImportCmdArgs(t *testing.T) {
	_, project := fakeUser(t)
	mcp := filepath.Join(project, "servers.json")
	os.WriteFile(mcp, []byte(`{"mcpServers": {"a": {"command": "x"}}}`), 0o644)
	broken := filepath.Join(project, "broken.json")
	os.WriteFile(broken, []byte("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\" \"args\": []}\n  }\n}\n"), 0o644)
	other := filepath.Join(project, "package.json")
	os.WriteFile(other, []byte(`{"name": "app"}`), 0o644)

	tests := []struct {
		name     string
		args     []string
		wantOut  string // in stdout
		wantLog  string // in stderr
		wantErr  string
		errUsage bool
	}{
		{"help", []string{"-h"}, "Usage: toolsift import", "", "", false},
		{"help long", []string{"--help"}, "--client NAME", "", "", false},
		{"one client", []string{"--client", "cursor"}, "context7:", "read ~/.cursor/mcp.json (cursor)", "", false},
		{"a file, flags after", []string{mcp, "--client", "cursor"}, "  a:\n    command: x", "servers.json (cursor): 1 server", "", false},
		{"a file, guessed", []string{mcp}, "  a:", "read as Claude Code's .mcp.json format", "", false},
		{"unknown client", []string{"--client", "emacs"}, "", "", `--client: unknown client "emacs"`, true},
		{"bad flag", []string{"--frobnicate"}, "", "", "flag provided but not defined: -frobnicate; run 'toolsift import --help'", true},
		{"broken file", []string{broken}, "", "", "broken.json:3:26: want , or } after the value of \"command\"", false},
		{"unknown format", []string{other}, "", "", "if it is one, say which client's with --client NAME", false},
		{"missing file", []string{filepath.Join(project, "nope.json")}, "", "", "nope.json", false},
		{"no such client configured", []string{"--client", "opencode"}, "", "", "no opencode configuration found in ~ or " + project + ": name the files to read", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := importCmd(context.Background(), tt.args, &stdout, &stderr)
			checkErr(t, "import", tt.args, err, tt.wantErr, tt.errUsage, stderr.String())
			if !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantOut, stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.wantLog) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantLog, stderr.String())
			}
		})
	}
}

// TestImportCmdBrokenDiscovered: a broken file found on its own is reported and the others
// are still imported.
func TestImportCmdBrokenDiscovered(t *testing.T) {
	home, _ := fakeUser(t)
	os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"), []byte(`{"mcpServers": {`), 0o600)
	var stdout, stderr bytes.Buffer
	if err := importCmd(context.Background(), nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "not read, its servers are not in the output: "+filepath.Join(home, ".cursor", "mcp.json")+":1:16:") {
		t.Errorf("stderr = %s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "github:") {
		t.Errorf("the other files were not imported:\n%s", stdout.String())
	}
}

// checkErr checks what a command returned: no error when wantErr is empty, else one that
// holds it and is (or is not, as usage says) a usage error.
func checkErr(t *testing.T, cmd string, args []string, err error, wantErr string, usage bool, stderr string) {
	t.Helper()
	if wantErr == "" && err != nil {
		t.Fatalf("%s %q = %v\nstderr: %s", cmd, args, err, stderr)
	}
	if wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)) {
		t.Fatalf("%s %q = %v, want an error containing %q", cmd, args, err, wantErr)
	}
	if err != nil && errors.Is(err, errUsage) != usage {
		t.Errorf("%s %q: errors.Is(%v, errUsage) = %v, want %v", cmd, args, err, !usage, usage)
	}
}

// TestDroppedServers: replacing a configuration would drop a project's server too, not only
// one of every folder.
func TestDroppedServers(t *testing.T) {
	old := "mcpServers:\n  fs: {command: x}\n  extra: {command: e}\nprojects:\n  /p:\n    mcpServers:\n      pg: {command: pg}\n"
	tests := []struct{ name, new, want string }{
		{"the same", old, ""},
		{"one of every folder gone", "mcpServers:\n  fs: {command: x}\nprojects:\n  /p:\n    mcpServers:\n      pg: {command: pg}\n", "extra"},
		{"a project's gone", "mcpServers:\n  fs: {command: x}\n  extra: {command: e}\n", "projects./p.mcpServers.pg"},
		{"moved to another project", "mcpServers:\n  fs: {command: x}\n  extra: {command: e}\nprojects:\n  /q:\n    mcpServers:\n      pg: {command: pg}\n", "projects./p.mcpServers.pg"},
		{"new has more", old + "  /q:\n    mcpServers:\n      web: {command: w}\n", ""},
	}
	for _, tt := range tests {
		if got := strings.Join(droppedServers([]byte(old), []byte(tt.new)), ","); got != tt.want {
			t.Errorf("%s: dropped %q, want %q", tt.name, got, tt.want)
		}
	}
}
