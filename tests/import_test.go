package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImportThenStatus imports each client's config format, as the client itself writes
// it, and starts the servers of the result: every one must connect.
func TestImportThenStatus(t *testing.T) {
	web := startHTTPFixture(t)
	gh := catalog(t, "github")
	tests := []struct {
		client, file, text string
		servers            []string
	}{
		{"claude-code", ".mcp.json", fmt.Sprintf(`{"mcpServers": {
  "gh": {"type": "stdio", "command": %q, "args": ["--catalog", %q], "env": {"A": "1"}},
  "web": {"type": "http", "url": "%s/mcp", "headers": {"X-Test": "yes"}}}}`, fixtureBin, gh, web), []string{"gh", "web"}},
		{"claude-desktop", "claude_desktop_config.json", fmt.Sprintf(`{"globalShortcut": "Ctrl+Space",
  "mcpServers": {"gh": {"command": %q, "args": ["--catalog", %q]}}}`, fixtureBin, gh), []string{"gh"}},
		{"cursor", "mcp.json", fmt.Sprintf(`{"mcpServers": {"gh": {"command": %q, "args": ["--catalog", %q]},
  "legacy": {"url": "%s/sse"}}}`, fixtureBin, gh, web), []string{"gh", "legacy"}},
		{"vscode", "mcp.json", fmt.Sprintf(`{
  // VS Code writes JSONC
  "servers": {"gh": {"type": "stdio", "command": %q, "args": ["--catalog", %q],},
    "web": {"type": "http", "url": "%s/mcp"}},
  "inputs": [],
}`, fixtureBin, gh, web), []string{"gh", "web"}},
		{"gemini", "settings.json", fmt.Sprintf(`{"theme": "Default", "mcpServers": {
  "gh": {"command": %q, "args": ["--catalog", %q], "timeout": 30000, "trust": false},
  "web": {"httpUrl": "%s/mcp"}, "legacy": {"url": "%s/sse"}}}`, fixtureBin, gh, web, web), []string{"gh", "web", "legacy"}},
		{"codex", "config.toml", fmt.Sprintf(`model = "o3"

[mcp_servers.gh]
command = %q
args = ["--catalog", %q]
startup_timeout_sec = 20

[mcp_servers.web]
url = "%s/mcp"
`, fixtureBin, gh, web), []string{"gh", "web"}},
		{"copilot", "mcp-config.json", fmt.Sprintf(`{"mcpServers": {
  "gh": {"type": "local", "command": %q, "args": ["--catalog", %q], "tools": ["*"], "deferTools": "auto"},
  "web": {"type": "http", "url": "%s/mcp", "tools": ["*"]}}}`, fixtureBin, gh, web), []string{"gh", "web"}},
		{"opencode", "opencode.json", fmt.Sprintf(`{"$schema": "https://opencode.ai/config.json", "mcp": {
  "gh": {"type": "local", "command": [%q, "--catalog", %q], "enabled": true},
  "web": {"type": "remote", "url": "%s/mcp"}}}`, fixtureBin, gh, web), []string{"gh", "web"}},
	}
	for _, tt := range tests {
		t.Run(tt.client, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, tt.file)
			if err := os.WriteFile(src, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "toolsift.yaml")
			if stdout, stderr, code := runCLI(t, "import", "--client", tt.client, src, "-o", out); code != 0 {
				t.Fatalf("import = %d\n%s%s", code, stdout, stderr)
			}
			// A project's file (.mcp.json, opencode.json) is served in its project, here dir.
			stdout, stderr, code := runCLIWith(t, append(isolatedEnv(t), "CLAUDE_PROJECT_DIR="+dir), "status", "--config", out, "--wait", "20s")
			if code != 0 {
				data, _ := os.ReadFile(out)
				t.Fatalf("status of the imported config = %d\n%s%s\nconfig:\n%s", code, stdout, stderr, data)
			}
			for _, name := range tt.servers {
				if !regexp.MustCompile(`(?m)^` + name + `\s+connected\s+\d+`).MatchString(stdout) {
					t.Errorf("server %s not connected:\n%s", name, stdout)
				}
			}
			if n := strings.Count(stdout, " connected "); n != len(tt.servers) {
				t.Errorf("%d servers connected, want %d:\n%s", n, len(tt.servers), stdout)
			}
		})
	}
}
