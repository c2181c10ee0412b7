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

// TestServersCmd drives add, remove and list on a configuration of its own, each message
// checked for the fix it names.
func TestServersCmd(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	t.Setenv("T", "t")
	t.Setenv("DB_URL", "postgres://x")
	project := filepath.Join(dir, "app")
	os.MkdirAll(project, 0o755)
	t.Chdir(project)
	cfg := filepath.Join(dir, "xdg", "toolsift", "config.yaml")
	ctx := context.Background()
	tests := []struct {
		name     string
		run      func(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) error
		args     []string
		stdout   string // a substring of stdout, or of the error when err is set
		err      bool
		usageErr bool
	}{
		{"add makes the user's config", add, []string{"memory", "--", "npx", "-y", "@modelcontextprotocol/server-memory"}, "Added memory to " + cfg, false, false},
		{"add a remote server", add, []string{"--type", "sse", "-H", "Authorization: Bearer ${T}", "jira", "--url", "https://jira.example.com/sse"}, "Added jira", false, false},
		{"add for the project", add, []string{"--project", "-e", "DB=${DB_URL}", "pg", "--", "pg-mcp"}, "for project " + project, false, false},
		{"list", list, nil, "memory: npx -y @modelcontextprotocol/server-memory", false, false},
		{"list shows the project's", list, nil, "pg: pg-mcp (this project's)", false, false},
		{"add a name taken", add, []string{"memory", "--", "x"}, `server "memory" is already in the configuration; to replace it, run toolsift remove memory first`, true, false},
		{"add without what", add, []string{"gh"}, "say what gh is: toolsift add gh -- COMMAND [ARGS...]", true, true},
		{"add two names", add, []string{"a", "b", "--", "x"}, "name one server", true, true},
		{"add both", add, []string{"a", "--url", "https://x", "--", "x"}, "give a command after -- or --url, not both", true, true},
		{"add -e to a url", add, []string{"-e", "A=1", "a", "--url", "https://x"}, "a remote server takes headers", true, true},
		{"add -H to a command", add, []string{"-H", "A: 1", "a", "--", "x"}, "--type and -H are for a remote server", true, true},
		{"add a bad -e", add, []string{"-e", "TOKEN", "a", "--", "x"}, `-e "TOKEN": write it as -e KEY=VALUE`, true, true},
		{"add a bad name", add, []string{"my server", "--", "x"}, "the change would make " + cfg + " invalid, so it was not written", true, false},
		{"remove one not there", remove, []string{"memry"}, `server "memry" is not in the configuration; it has: memory, jira`, true, false},
		{"remove a project's without --project", remove, []string{"pg"}, "it is a server of project " + project + ": toolsift remove --project pg", true, false},
		{"remove the project's", remove, []string{"--project", "pg"}, "Removed pg from " + cfg + ", for project " + project, false, false},
		{"remove", remove, []string{"memory"}, "Removed memory", false, false},
		{"list after", list, nil, "config: " + cfg + " (1 server)", false, false},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		err := tt.run(ctx, tt.args, &stdout, &stderr)
		got := stdout.String()
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != tt.err || !strings.Contains(got, tt.stdout) || errors.Is(err, errUsage) != tt.usageErr {
			t.Errorf("%s: %q, error %v; want %q (error %v, usage %v)", tt.name, stdout.String(), err, tt.stdout, tt.err, tt.usageErr)
		}
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), "jira:\n    type: sse\n    url: \"https://jira.example.com/sse\"\n    headers:\n      Authorization: \"Bearer ${T}\"\n") || strings.Contains(string(data), "memory") {
		t.Errorf("config after:\n%s", data)
	}
	if st, _ := os.Stat(cfg); st.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", st.Mode())
	}
}

func add(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) error {
	return addCmd(ctx, args, stdout, stderr)
}

func remove(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) error {
	return removeCmd(ctx, args, stdout, stderr)
}

func list(ctx context.Context, args []string, stdout, stderr *bytes.Buffer) error {
	return listCmd(ctx, args, stdout, stderr)
}

// TestListRedacts: list shows what a server runs, but not a password in its arguments.
func TestListRedacts(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(cfg, []byte("mcpServers:\n  pg:\n    command: npx\n    args: [\"-y\", \"pg-mcp\", \"postgresql://me:s3cretpw@localhost/app\"]\n"), 0o600)
	var stdout, stderr bytes.Buffer
	if err := listCmd(context.Background(), []string{"--config", cfg}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if out := stdout.String(); strings.Contains(out, "s3cretpw") || !strings.Contains(out, "pg: npx -y pg-mcp postgresql://") {
		t.Errorf("list = %s", out)
	}
}
