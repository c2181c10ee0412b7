package main

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
	// Importing again finds nothing to import from Claude Code: toolsift's entry is skipped.
	stdout.Reset()
	stderr.Reset()
	if err := importCmd(ctx, []string{"--client", "claude-code"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), `server "toolsift": this is toolsift itself: left out`) || !strings.Contains(stdout.String(), "mcpServers: {}") {
		t.Errorf("import after setup: stdout %s\nstderr %s", stdout.String(), stderr.String())
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
