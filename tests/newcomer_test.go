//go:build unix

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewcomerWalk (issue 33) is a new user's first hour, in order, with nothing guessed: the
// release's npm tarballs installed offline; import of their Claude Code servers (a local one
// and one that signs in with OAuth); status, which names the sign-in; auth login; setup; a
// real Claude Code run that searches, unlocks and calls a tool through toolsift; day-two add,
// remove and import --merge; undo, which puts ~/.claude.json back byte for byte; and
// npm uninstall.
func TestNewcomerWalk(t *testing.T) {
	claude := claudeCLI(t)
	d := newAuthDouble(t).start()
	home := t.TempDir()
	claudeJSON := filepath.Join(home, ".claude.json")
	original := fmt.Sprintf(`{
  "numStartups": 3,
  "mcpServers": {
    "fx": {"type": "stdio", "command": %q, "args": []},
    "atl": {"type": "http", "url": %q}
  }
}
`, fixtureBin, d.rs.URL+"/mcp")
	if err := os.WriteFile(claudeJSON, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}

	// Installed as the README says, offline, from the release's npm tarballs.
	toolsift, err := npmInstall("prefix-walk")
	if err != nil {
		t.Fatal(err)
	}
	env := append(isolatedEnv(t), "HOME="+home, "XDG_CONFIG_HOME=", "XDG_STATE_HOME=", "XDG_CACHE_HOME=",
		"BROWSER="+fixtureBin+" --browse")
	run := func(wantCode int, args ...string) string {
		t.Helper()
		out, code := runExe(t, toolsift, env, home, args...)
		if code != wantCode {
			t.Fatalf("toolsift %s = %d, want %d\n%s", strings.Join(args, " "), code, wantCode, out)
		}
		return out
	}
	cfg := filepath.Join(home, ".config", "toolsift", "config.yaml")
	run(0, "import", "-o", cfg)
	if out := run(1, "status", "--wait", "20s"); !strings.Contains(out, "atl needs you to sign in: run toolsift auth login atl") {
		t.Fatalf("status before the sign-in does not name it:\n%s", out)
	}
	if out := run(0, "auth", "login", "atl", "--timeout", "20s"); !strings.Contains(out, "atl: signed in") {
		t.Fatalf("auth login:\n%s", out)
	}
	run(0, "status", "--wait", "20s")
	if out := run(0, "setup", "claude-code"); !strings.Contains(out, "claude-code") {
		t.Fatalf("setup:\n%s", out)
	}

	// Claude Code as the user runs it, with the servers in ~/.claude.json that setup wrote.
	model := newClaudeModel(t, "")
	cmd := exec.Command(claude, "-p", claudePrompt, "--allowedTools", "mcp__"+claudeServer,
		"--no-session-persistence", "--output-format", "stream-json", "--verbose")
	cmd.Env = append(claudeEnv(home, model.URL), "TOOLSIFT_TOKEN_STORE=file")
	cmd.Dir = t.TempDir()
	if r := runClient(t, cmd, "", model.summary); r.err != nil {
		t.Fatalf("claude -p: %v", r.err)
	}
	if res, ok := model.result(claudeCallToolID); !ok || res.isError || !strings.Contains(res.text, `"message":"`+claudeCallToolMessage+`"`) {
		t.Errorf("Claude Code's call through toolsift = %+v (found %v)\nmodel requests:\n%s", res, ok, model.summary())
	}

	// Day two.
	run(0, "add", "fetch", "--", "uvx", "mcp-server-fetch")
	run(0, "remove", "fetch")
	run(0, "remove", "fx")
	if out := run(0, "import", "-o", cfg, "--merge"); !strings.Contains(out, "fx is back") {
		t.Errorf("import --merge after remove fx:\n%s", out)
	}

	// Undo, then uninstall.
	// Claude Code keeps its own state in the file too (it wrote some in its run): undo puts
	// the servers back as they were written, and leaves Claude Code's keys alone.
	run(0, "setup", "claude-code", "--undo")
	servers := original[strings.Index(original, `"mcpServers"`) : strings.LastIndex(original, "}\n}")+1]
	if now, _ := os.ReadFile(claudeJSON); !strings.Contains(string(now), servers) || strings.Contains(string(now), `"toolsift"`) || !strings.Contains(string(now), `"numStartups"`) {
		t.Errorf("~/.claude.json after undo:\n%s\nwant the servers back byte for byte:\n%s", now, servers)
	}
	prefix := filepath.Dir(filepath.Dir(toolsift))
	uninstall := exec.Command("npm", "uninstall", "-g", "--prefix", prefix, "toolsift")
	if out, err := uninstall.CombinedOutput(); err != nil {
		t.Fatalf("npm uninstall: %v\n%s", err, out)
	}
	if _, err := os.Stat(toolsift); !os.IsNotExist(err) {
		t.Errorf("toolsift is still at %s after npm uninstall -g toolsift", toolsift)
	}
}
