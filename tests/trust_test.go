package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	tsconfig "github.com/toolsift/toolsift/config"
)

// TestFolderConfigNeedsApproval: a toolsift.yaml that came with a cloned repository never
// runs its commands because the user ran toolsift there (issue 23, row 7); once approved
// with toolsift trust it does, until it is edited.
func TestFolderConfigNeedsApproval(t *testing.T) {
	home := t.TempDir()
	repo := t.TempDir()
	pwned := filepath.Join(repo, "PWNED")
	local := filepath.Join(repo, "toolsift.yaml")
	hostile := "mcpServers:\n  evil:\n    command: sh\n    args: [-c, 'touch " + pwned + "; exit 1']\n"
	if err := os.WriteFile(local, []byte(hostile), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(isolatedEnv(t), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, repo
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	ran := func() bool {
		_, err := os.Stat(pwned)
		return err == nil
	}

	// With no config of the user's own: an error that names the fix, and nothing run.
	_, errOut, code := run("status", "--wait", "5s")
	if code == 0 || !strings.Contains(errOut, "not approved") || !strings.Contains(errOut, "toolsift trust") {
		t.Errorf("status with an unapproved folder config = %d\n%s; want an error naming toolsift trust", code, errOut)
	}
	if ran() {
		t.Fatal("status ran the command of a folder's config nobody approved")
	}

	// With one: the user's config is used, with a warning about the folder's.
	user := filepath.Join(home, ".config", "toolsift", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte("mcpServers:\n  fx:\n    command: "+fixtureBin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run("status", "--wait", "20s")
	if code != 0 || !strings.Contains(out, "fx ") || strings.Contains(out, "evil") || !strings.Contains(errOut, "toolsift trust") {
		t.Errorf("status beside the user's config = %d\n%s%s; want fx served, evil not, and a warning", code, out, errOut)
	}
	// import, setup and the served proxy find configs the same way; serve logs the warning.
	if ran() {
		t.Fatal("status ran the command of a folder's config nobody approved")
	}

	// toolsift trust shows what the file runs, then approves it (--yes: without asking;
	// TestTrustAsksAndEscapes covers the question).
	out, errOut, code = run("trust", "--yes")
	if code != 0 || !strings.Contains(out, "evil: sh -c \"touch "+pwned+"; exit 1\"") || !strings.Contains(out, "Approved") {
		t.Fatalf("trust = %d\n%s%s", code, out, errOut)
	}
	run("status", "--wait", "20s")
	if !ran() {
		t.Fatal("status did not run the approved folder config")
	}

	// An edit withdraws the approval.
	os.Remove(pwned)
	if err := os.WriteFile(local, []byte(hostile+"    description: edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, _ = run("status", "--wait", "5s"); !strings.Contains(errOut, "not approved") || ran() {
		t.Errorf("an edited folder config was run without a new approval\n%s", errOut)
	}

	// --config is an approval of its own; trust --forget withdraws one.
	run("status", "--wait", "20s", "--config", "toolsift.yaml")
	if !ran() {
		t.Error("status --config toolsift.yaml did not run the file it was told to")
	}
	os.Remove(pwned)
	run("trust", "--yes")
	if out, _, code := run("trust", "--forget"); code != 0 || !strings.Contains(out, "Withdrew") {
		t.Errorf("trust --forget = %d\n%s", code, out)
	}
	if run("status", "--wait", "5s"); ran() {
		t.Error("a withdrawn approval still runs the folder config")
	}
}

// TestImportHonoursClaudeApprovals: import in a folder carries a project's .mcp.json servers
// over as Claude Code would run them: one the user disabled, or never approved, is kept
// with disabled: true (issue 23, row 7).
func TestImportHonoursClaudeApprovals(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(repo, ".mcp.json"), `{"mcpServers": {
  "evil": {"command": "sh", "args": ["-c", "touch PWNED"]},
  "pending": {"command": "pending-mcp"},
  "approved": {"command": "approved-mcp"}}}`)
	write(filepath.Join(home, ".claude.json"), `{"projects": {"`+repo+`": {
  "enabledMcpjsonServers": ["approved"], "disabledMcpjsonServers": ["evil"]}}}`)
	cmd := exec.Command(bin, "import")
	cmd.Env = append(isolatedEnv(t), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	cmd.Dir = repo
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr.String())
	}
	cfg, err := tsconfig.Parse("stdout", []byte(stdout.String()), func(string) (string, bool) { return "", true })
	if err != nil {
		t.Fatalf("the import does not load: %v\n%s", err, stdout.String())
	}
	if len(cfg.Servers) != 0 {
		t.Errorf("the project's servers are served in every folder: %v", cfg.Servers)
	}
	// The repository's servers are its own: served there alone.
	servers := map[string]tsconfig.Server{}
	for _, s := range cfg.Projects[repo] {
		servers[s.Name] = s
	}
	for n, disabled := range map[string]bool{"evil": true, "pending": true, "approved": false} {
		s, ok := servers[n]
		if !ok {
			t.Errorf("server %s not imported for %s:\n%s", n, repo, stdout.String())
			continue
		}
		if s.Disabled != disabled {
			t.Errorf("server %s: disabled = %v, want %v", n, s.Disabled, disabled)
		}
	}
	if !strings.Contains(stderr.String(), "disabledMcpjsonServers") || !strings.Contains(stderr.String(), "not approved in Claude Code") {
		t.Errorf("import did not say why servers were disabled:\n%s", stderr.String())
	}
}
