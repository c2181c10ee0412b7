package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSetupCmd is the flow the README suggests: import into the default configuration,
// switch Claude Code over, and back.
func TestSetupCmd(t *testing.T) {
	home, project := fakeUser(t)
	claude := filepath.Join(home, ".claude.json")
	orig, _ := os.ReadFile(claude)
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	// Without a configuration there is nothing to point the client at.
	err := setupCmd(ctx, []string{"claude-code", "--command", "/opt/bin/toolsift"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "toolsift import -o ~/.config/toolsift/config.yaml") {
		t.Fatalf("setup without a config = %v", err)
	}
	cfg := filepath.Join(home, ".config", "toolsift", "config.yaml")
	if err := importCmd(ctx, []string{"--client", "claude-code", "-o", cfg}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	imported, _ := os.ReadFile(cfg)

	stdout.Reset()
	if err := setupCmd(ctx, []string{"claude-code", "--command", "/opt/bin/toolsift", "--dry-run"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(claude); !bytes.Equal(now, orig) {
		t.Fatal("--dry-run wrote the file")
	}
	for _, want := range []string{
		"claude-code: ~/.claude.json",
		"would be moved to toolsift: github, memory, postgres (project ~/src/app)",
		"toolsift entry: /opt/bin/toolsift --config " + cfg,
		"not set in this shell: GITHUB_PAT",
		"Dry run, nothing written. The servers would be:\n  \"mcpServers\": {\n    \"toolsift\": {",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout.String())
		}
	}

	stdout.Reset()
	if err := setupCmd(ctx, []string{"claude-code", "--command", "/opt/bin/toolsift"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "backup: ~/.local/state/toolsift/setup/claude-json-") || !strings.Contains(stdout.String(), "Done: restart Claude Code") {
		t.Errorf("setup output:\n%s", stdout.String())
	}
	switched, _ := os.ReadFile(claude)
	if !bytes.Contains(switched, []byte(`"args": ["--config", "`+cfg+`"]`)) || bytes.Contains(switched, []byte("server-memory")) || !bytes.Contains(switched, []byte(`"numStartups": 3`)) {
		t.Errorf("switched file:\n%s", switched)
	}
	// Importing again reads the file as it was before setup: the same servers, from setup's
	// record, not an empty configuration.
	stdout.Reset()
	stderr.Reset()
	if err := importCmd(ctx, []string{"--client", "claude-code"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != string(imported) || !strings.Contains(stderr.String(), "~/.claude.json was switched to toolsift by setup: read as it was") {
		t.Errorf("import after setup: stdout %s\nstderr %s\nwant the first import:\n%s", stdout.String(), stderr.String(), imported)
	}
	// A server added to the configuration by hand survives a second import: --force would
	// drop it and is refused; --merge adds only what the file lacks (nothing here).
	stdout.Reset()
	if err := addCmd(ctx, []string{"--config", cfg, "extra", "--", "extra-mcp"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	err = importCmd(ctx, []string{"--client", "claude-code", "--force", "-o", cfg}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "has 1 server that the import does not: extra; replacing it would drop them") {
		t.Errorf("--force over a server added by hand = %v", err)
	}
	stderr.Reset()
	if err := importCmd(ctx, []string{"--client", "claude-code", "--merge", "-o", cfg}, &stdout, &stderr); err != nil || !strings.Contains(stderr.String(), "already has every server imported: nothing to add") {
		t.Errorf("--merge = %v; stderr %s", err, stderr.String())
	}
	now, _ := os.ReadFile(cfg)
	if again := bytes.Replace(now, []byte("  extra:\n    command: extra-mcp\n"), nil, 1); !bytes.Equal(again, imported) {
		t.Errorf("config after the second import, want the first with extra added:\n%s", now)
	}

	stdout.Reset()
	if err := setupCmd(ctx, []string{"--undo", "claude-code"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(claude); !bytes.Equal(now, orig) {
		t.Errorf("undo did not restore the file:\n%s", now)
	}
	if !strings.Contains(stdout.String(), "restored ~/.claude.json byte for byte") {
		t.Errorf("undo output:\n%s", stdout.String())
	}
	_ = project
}

func TestSetupCmdArgs(t *testing.T) {
	home, project := fakeUser(t)
	cfg := filepath.Join(home, ".config", "toolsift", "config.yaml")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, []byte("mcpServers:\n  memory:\n    command: npx\n"), 0o600)
	broken := filepath.Join(project, "broken.yaml")
	os.WriteFile(broken, []byte("mcpServers:\n  a:\n    comand: x\n"), 0o600)
	tests := []struct {
		name     string
		args     []string
		wantOut  string
		wantErr  string
		errUsage bool
	}{
		{"help", []string{"-h"}, "Usage: toolsift setup CLIENT", "", false},
		{"no client", nil, "", "name one client: toolsift setup CLIENT, where CLIENT is one of claude-code,", true},
		{"two clients", []string{"cursor", "codex"}, "", "name one client", true},
		{"unknown client", []string{"emacs"}, "", `unknown client "emacs" (known: claude-code`, true},
		{"bad flag", []string{"cursor", "--nope"}, "", "flag provided but not defined: -nope; run 'toolsift setup --help'", true},
		{"servers missing from the config", []string{"claude-code", "--command", "/t"}, "",
			"~/.claude.json has servers that are not in ~/.config/toolsift/config.yaml: github, postgres; setup would take them out of Claude Code: add them first (toolsift import --client claude-code ~/.claude.json", false},
		{"forced", []string{"cursor", "--force", "--command", "/t", "--dry-run"}, "note: not in ~/.config/toolsift/config.yaml: context7; setup keeps them with the backup, and setup cursor --undo puts them back", "", false},
		{"broken config", []string{"cursor", "--config", broken, "--command", "/t"}, "", "broken.yaml:3: mcpServers.a.comand: unknown key", false},
		{"missing config", []string{"cursor", "--config", "nope.yaml", "--command", "/t"}, "", "no such file or directory: make it from your clients' servers with toolsift import -o ~/src/app/nope.yaml", false},
		{"undo nothing", []string{"gemini", "--undo"}, "", "nothing to undo", false},
		{"file flag", []string{"claude-code", "--file", ".vscode/mcp.json", "--command", "/t", "--force", "--dry-run"},
			"claude-code: ~/src/app/.vscode/mcp.json", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := setupCmd(context.Background(), tt.args, &stdout, &stderr)
			checkErr(t, "setup", tt.args, err, tt.wantErr, tt.errUsage, stderr.String())
			if !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantOut, stdout.String())
			}
		})
	}
}

func TestSetupToolsiftCommand(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	real := filepath.Join(dir, "Cellar", "toolsift", "1.0", "toolsift")
	os.MkdirAll(filepath.Dir(real), 0o755)
	os.WriteFile(real, []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(bin, "toolsift")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	other := filepath.Join(dir, "other-toolsift")
	os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755)
	found := func(p string) func(string) (string, error) {
		return func(string) (string, error) { return p, nil }
	}
	notFound := func(string) (string, error) { return "", errors.New("not found") }
	tests := []struct {
		name     string
		exe      string
		lookPath func(string) (string, error)
		want     string
		wantErr  string
	}{
		{"the PATH's link to this binary", real, found(link), link, ""},
		{"not on PATH", real, notFound, real, ""},
		{"PATH has another toolsift", other, found(link), other, ""},
		{"go run", "/tmp/go-build123/b001/exe/toolsift", notFound, "", "temporary build"},
	}
	for _, tt := range tests {
		got, err := toolsiftCommand(tt.exe, tt.lookPath)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, errUsage) {
				t.Errorf("%s: toolsiftCommand = %q, %v; want a usage error containing %q", tt.name, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: toolsiftCommand = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestSetupProjectWalk is the newcomer's walk with a project: a user server and a project's
// .mcp.json, import, setup, the servers each folder gets, a server added the next day, and
// undo. The project's files are left as they were: no toolsift entry, no personal path, no
// backup in the work tree.
func TestSetupProjectWalk(t *testing.T) {
	home, project := fakeUser(t)
	t.Setenv("GITHUB_PAT", "x")
	mcpJSON := `{"mcpServers": {"notes": {"command": "npx", "args": ["-y", "notes-mcp"]}, "pending": {"command": "npx", "args": ["-y", "pending-mcp"]}}}`
	os.WriteFile(filepath.Join(project, ".mcp.json"), []byte(mcpJSON), 0o644)
	// Claude Code approved notes for this project; pending awaits approval.
	os.MkdirAll(filepath.Join(project, ".claude"), 0o755)
	os.WriteFile(filepath.Join(project, ".claude", "settings.json"), []byte(`{"enabledMcpjsonServers": ["notes"]}`), 0o644)
	claude := filepath.Join(home, ".claude.json")
	origClaude, _ := os.ReadFile(claude)
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	// The quick start, run from the home folder: Claude Code's projects are found from
	// ~/.claude.json.
	t.Chdir(home)
	cfgFile := filepath.Join(home, ".config", "toolsift", "config.yaml")
	if err := importCmd(ctx, []string{"--client", "claude-code", "-o", cfgFile}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := setupCmd(ctx, []string{"claude-code", "--command", "/opt/bin/toolsift"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"moved to toolsift: github, memory, postgres (project ~/src/app)",
		"claude-code: ~/src/app/.mcp.json (this project's .mcp.json is left as it is)",
		"served by toolsift in this project only, and no longer started by Claude Code for you: notes",
		"written: disabledMcpjsonServers in ~/src/app/.claude/settings.local.json",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("setup output lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "--file") {
		t.Errorf("setup suggests switching the project file with --file:\n%s", stdout.String())
	}
	if now, _ := os.ReadFile(filepath.Join(project, ".mcp.json")); string(now) != mcpJSON {
		t.Errorf(".mcp.json changed:\n%s", now)
	}
	local, _ := os.ReadFile(filepath.Join(project, ".claude", "settings.local.json"))
	if !bytes.Contains(local, []byte(`"notes"`)) || bytes.Contains(local, []byte(`"pending"`)) || bytes.Contains(local, []byte(home)) {
		t.Errorf("settings.local.json = %s", local)
	}
	filepath.WalkDir(project, func(p string, d os.DirEntry, err error) error {
		if strings.Contains(d.Name(), "backup") || strings.Contains(d.Name(), "toolsift") {
			t.Errorf("left in the project: %s", p)
		}
		return nil
	})

	// Each folder gets its own servers: the project's only there.
	names := func(dir string) string {
		t.Helper()
		t.Chdir(dir)
		cfg, err := loadConfig("", func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, s := range cfg.Servers {
			if !s.Disabled {
				n = append(n, s.Name)
			}
		}
		return strings.Join(n, " ")
	}
	if got := names(project); got != "github memory postgres notes" {
		t.Errorf("servers in the project = %s", got)
	}
	if got := names(home); got != "github memory" {
		t.Errorf("servers elsewhere = %s", got)
	}
	t.Setenv("CLAUDE_PROJECT_DIR", project) // Claude Code says which project, wherever toolsift runs
	if got := names(home); got != "github memory postgres notes" {
		t.Errorf("servers with CLAUDE_PROJECT_DIR = %s", got)
	}
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	t.Chdir(project)

	// The next day: one more server, without a command the quick start does not show.
	stdout.Reset()
	if err := addCmd(ctx, []string{"fetch", "--", "uvx", "mcp-server-fetch"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := listCmd(ctx, nil, &stdout, &stderr); err != nil || !strings.Contains(stdout.String(), "fetch: uvx mcp-server-fetch") || !strings.Contains(stdout.String(), "notes: npx -y notes-mcp (in "+project+") (this project's)") || !strings.Contains(stdout.String(), "pending-mcp (in "+project+") (disabled) (this project's)") {
		t.Errorf("list = %v:\n%s", err, stdout.String())
	}

	stdout.Reset()
	t.Chdir(home)
	if err := setupCmd(ctx, []string{"claude-code", "--undo"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(claude); !bytes.Equal(now, origClaude) {
		t.Errorf("undo did not restore ~/.claude.json:\n%s", now)
	}
	if _, err := os.Stat(filepath.Join(project, ".claude", "settings.local.json")); !os.IsNotExist(err) {
		t.Errorf("undo left settings.local.json: %v", err)
	}
	if !strings.Contains(stdout.String(), "Claude Code starts this project's .mcp.json servers again: notes") {
		t.Errorf("undo output:\n%s", stdout.String())
	}
}

// TestStartEntry: setup run from npx's cache writes npx at this version, which lasts where
// the cache path may not; run from an install, the binary's path.
func TestStartEntry(t *testing.T) {
	noPath := func(string) (string, error) { return "", errors.New("not found") }
	tests := []struct {
		name, exe, goos, version string
		want                     string
	}{
		{"npx cache", "/home/me/.npm/_npx/0123abcd/node_modules/toolsift-linux-x64/bin/toolsift", "linux", "v1.4.2", "npx -y toolsift@1.4.2 --config /c.yaml"},
		{"npx cache, a prerelease", "/home/me/.npm/_npx/0123abcd/node_modules/toolsift-darwin-arm64/bin/toolsift", "darwin", "v1.5.0-rc.1", "npx -y toolsift@1.5.0-rc.1 --config /c.yaml"},
		{"npx cache on Windows", `C:\Users\me\AppData\Local\npm-cache\_npx\0123abcd\node_modules\toolsift-windows-x64\bin\toolsift.exe`, "windows", "v1.4.2", "cmd /c npx -y toolsift@1.4.2 --config /c.yaml"},
		{"npx cache, no version", "/home/me/.npm/_npx/0123abcd/node_modules/toolsift-linux-x64/bin/toolsift", "linux", "dev", "npx -y toolsift --config /c.yaml"},
		{"a global npm install", "/usr/lib/node_modules/toolsift-linux-x64/bin/toolsift", "linux", "v1.4.2", "/usr/lib/node_modules/toolsift-linux-x64/bin/toolsift --config /c.yaml"},
		{"go install", "/home/me/go/bin/toolsift", "linux", "v1.4.2", "/home/me/go/bin/toolsift --config /c.yaml"},
	}
	for _, tt := range tests {
		e, err := startEntry(tt.exe, tt.goos, tt.version, "/c.yaml", noPath)
		if got := strings.Join(append([]string{e.Command}, e.Args...), " "); err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
