package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte("mcpServers:\n  github:\n    command: npx\n    argz: [x]\n"), 0o644)
	failing := filepath.Join(dir, "failing.yaml")
	os.WriteFile(failing, []byte("mcpServers:\n  gone:\n    command: /nonexistent/server\n"), 0o644)
	slow := filepath.Join(dir, "slow.yaml")
	os.WriteFile(slow, []byte("mcpServers:\n  mute:\n    command: sleep\n    args: [\"30\"]\n"), 0o644)
	unset := filepath.Join(dir, "unset.yaml")
	os.WriteFile(unset, []byte("mcpServers:\n  jira:\n    url: https://x/mcp\n    headers: {Authorization: \"Bearer ${TOOLSIFT_TEST_UNSET}\"}\n"), 0o644)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Chdir(dir)

	tests := []struct {
		name     string
		args     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{"version", []string{"version"}, "toolsift ", "", 0},
		{"--version", []string{"--version"}, "toolsift ", "", 0},
		{"help", []string{"help"}, "Commands:\n  serve", "", 0},
		{"-h", []string{"-h"}, "  status ", "", 0},
		{"--help", []string{"--help"}, "  search ", "", 0},
		{"help lists every command", []string{"help"}, "  eval ", "", 0},
		{"help COMMAND", []string{"help", "status"}, "Usage: toolsift status [--config FILE]", "", 0},
		{"help unknown COMMAND", []string{"help", "frob"}, "", `unknown command "frob"; run 'toolsift help'`, 2},
		{"serve --help", []string{"serve", "--help"}, "Usage: toolsift serve", "", 0},
		{"search -h", []string{"search", "-h"}, "-tools FILE", "", 0},
		{"eval --help", []string{"eval", "--help"}, "-cases FILE", "", 0},
		{"status --help", []string{"status", "--help"}, "-wait duration", "", 0},
		{"import --help", []string{"import", "--help"}, "Usage: toolsift import [--client NAME]", "", 0},
		{"help setup", []string{"help", "setup"}, "Usage: toolsift setup CLIENT", "", 0},
		{"flags after the query", []string{"search", "create", "issue", "-n"}, "", "flag needs an argument: -n", 2},
		{"version --help", []string{"version", "--help"}, "Usage: toolsift version", "", 0},
		{"unknown command", []string{"frobnicate"}, "", `unknown command "frobnicate"; run 'toolsift help' for the list`, 2},
		{"bad flag", []string{"--nope"}, "", "flag provided but not defined: -nope; run 'toolsift serve --help'", 2},
		{"search without query", []string{"search", "--tools", "x.json"}, "", "no query: put it after the flags", 2},
		{"search without source", []string{"search", "create", "issue"}, "", "no configuration: looked for toolsift.yaml", 1},
		{"search with both sources", []string{"search", "--config", broken, "--tools", "x.json", "q"}, "", "give either --config FILE", 2},
		{"eval without cases", []string{"eval"}, "", "eval takes --cases FILE", 2},
		{"serve extra argument", []string{"serve", "extra"}, "", `unexpected argument "extra"`, 2},
		{"bad log level", []string{"--log-level", "loud", "--config", broken}, "", "--log-level", 2},
		{"no config", nil, "", "looked for toolsift.yaml and " + filepath.Join(dir, "xdg", "toolsift", "config.yaml"), 1},
		{"missing file", []string{"serve", "--config", filepath.Join(dir, "nope.yaml")}, "", "nope.yaml", 1},
		{"broken yaml", []string{"--config", broken}, "", broken + ":4: mcpServers.github.argz: unknown key; did you mean args?", 1},
		{"status of a server still starting", []string{"status", "--config", slow, "--wait", "500ms"}, "SERVER", "1 of 1 servers still starting after 500ms: mute (a first npx start downloads the server; run again with --wait 2m)", 1},
		{"status of a failing server", []string{"status", "--config", failing, "--wait", "10s"}, "SERVER", "1 of 1 servers failed: gone (see LAST ERROR", 1},
		{"unset variable", []string{"status", "--config", unset, "--wait", "5s"}, "unset.yaml:4: ${TOOLSIFT_TEST_UNSET} is not set (used in mcpServers.jira.headers.Authorization;", "1 of 1 servers failed: jira", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("run(%q) = %v", tt.args, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run(%q) = %v, want error containing %q", tt.args, err, tt.wantErr)
			} else if code := exitCode(err); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantOut)
			}
		})
	}
}

// TestRunServesStdio runs the whole program in-process on a configuration with no reachable
// server: it must answer initialize at once and exit cleanly when stdin ends.
func TestRunServesStdio(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolsift.yaml")
	os.WriteFile(cfg, []byte("mcpServers:\n  gone:\n    command: /nonexistent/server\n"), 0o644)
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"--config", cfg}, in, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr: %s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"serverInfo":{"name":"toolsift"`) {
		t.Errorf("stdout = %q, want an initialize result", stdout.String())
	}
	if !strings.Contains(stderr.String(), "serving on stdio") {
		t.Errorf("stderr = %q, want logs there", stderr.String())
	}
}

// TestSearchFindsAsToolSearch: the search command finds through finder.Find, so select:
// and group: work there as for the model, and a plain query ranks.
func TestSearchFindsAsToolSearch(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gh.json")
	tools := `{"tools":[
		{"name":"create_issue","description":"Create an issue in a repository.","inputSchema":{"type":"object"}},
		{"name":"list_issues","description":"List the issues of a repository.","inputSchema":{"type":"object"}},
		{"name":"get_me","description":"Get the signed-in user.","inputSchema":{"type":"object"}}]}`
	if err := os.WriteFile(file, []byte(tools), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []string // the names printed, in order
		why   string
	}{
		{"create issue", []string{"gh__create_issue"}, ""},
		{"select:gh__get_me,gh__list_issues", []string{"gh__get_me", "gh__list_issues"}, "(select)"},
		{"group:gh", []string{"gh__create_issue", "gh__list_issues", "gh__get_me"}, "(group)"},
		{"select:gh__nope", nil, ""},
	}
	for _, tt := range tests {
		var out, errs strings.Builder
		err := run(context.Background(), append([]string{"search", "--tools", file}, strings.Fields(tt.query)...), nil, &out, &errs)
		if err != nil {
			t.Errorf("search %s: %v (%s)", tt.query, err, errs.String())
			continue
		}
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] != "unknown:" {
				names = append(names, f[2])
			}
		}
		if len(tt.want) > 0 && !slices.Equal(names[:min(len(names), len(tt.want))], tt.want) || tt.why != "" && !strings.Contains(out.String(), tt.why) {
			t.Errorf("search %s printed\n%s\nwant %v first, marked %q", tt.query, out.String(), tt.want, tt.why)
		}
		if tt.want == nil && !strings.Contains(out.String(), "unknown: gh__nope") {
			t.Errorf("search %s printed\n%s\nwant the unknown name", tt.query, out.String())
		}
	}
}
