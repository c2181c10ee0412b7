package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 23, rows 6, 8 and 9: setup never loses a server or the client's own writes, and a
// setup killed midway leaves nothing the next run trips on.

// setupUser makes a home with ~/.claude.json holding servers, and a toolsift config holding
// the first of them. It returns the environment to run toolsift in.
func setupUser(t *testing.T, servers map[string]string, padding int) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	var entries []string
	for name, cmd := range servers {
		entries = append(entries, fmt.Sprintf("%q: {\"command\": %q}", name, cmd))
	}
	claude := fmt.Sprintf("{\n  \"numStartups\": 0,\n  \"padding\": %q,\n  \"mcpServers\": {%s}\n}\n", strings.Repeat("x", padding), strings.Join(entries, ", "))
	write(t, filepath.Join(home, ".claude.json"), claude)
	var cfg strings.Builder
	cfg.WriteString("mcpServers:\n")
	for name, cmd := range servers {
		fmt.Fprintf(&cfg, "  %s:\n    command: %s\n", name, cmd)
	}
	write(t, filepath.Join(home, ".config", "toolsift", "config.yaml"), cfg.String())
	env = append(isolatedEnv(t), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"))
	return home, env
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func runIn(t *testing.T, env []string, dir string, args ...string) (string, int) {
	t.Helper()
	return runExe(t, bin, env, dir, args...)
}

// runExe runs the toolsift at exe (the built one, or one installed from npm) in dir with
// env, and returns its output and exit code.
func runExe(t *testing.T, exe string, env []string, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func claudeServers(t *testing.T, home string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("~/.claude.json is not JSON: %v", err)
	}
	return f.MCPServers
}

// TestSetupForceKeepsLaterServers: a server added to ~/.claude.json after setup and moved
// by setup --force comes back with --undo.
func TestSetupForceKeepsLaterServers(t *testing.T) {
	home, env := setupUser(t, map[string]string{"memory": "memory-mcp"}, 0)
	if out, code := runIn(t, env, home, "setup", "claude-code", "--command", "/opt/toolsift"); code != 0 {
		t.Fatalf("setup = %d\n%s", code, out)
	}
	path := filepath.Join(home, ".claude.json")
	data, _ := os.ReadFile(path)
	data = bytes.Replace(data, []byte(`"mcpServers": {`), []byte(`"mcpServers": {"github": {"command": "github-mcp"},`), 1)
	os.WriteFile(path, data, 0o600)
	out, code := runIn(t, env, home, "setup", "claude-code", "--command", "/opt/toolsift", "--force")
	if code != 0 || !strings.Contains(out, "moved to toolsift: github") || !strings.Contains(out, "--undo puts them back") {
		t.Fatalf("setup --force = %d\n%s", code, out)
	}
	if _, ok := claudeServers(t, home)["github"]; ok {
		t.Fatal("github is still in ~/.claude.json")
	}
	if out, code := runIn(t, env, home, "setup", "claude-code", "--undo"); code != 0 || !strings.Contains(out, "put back 2 servers") {
		t.Fatalf("undo = %d\n%s", code, out)
	}
	got := claudeServers(t, home)
	for _, name := range []string{"memory", "github"} {
		if _, ok := got[name]; !ok {
			t.Errorf("after undo %s is in no file: %v", name, got)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(home, ".claude.json*")); len(left) != 1 {
		t.Errorf("files beside ~/.claude.json: %v", left)
	}
}

// TestSetupWhileTheClientWrites: Claude Code rewrites ~/.claude.json (read, change, write)
// while setup runs, at a moment spread over setup's run from one round to the next. The
// client's write is never lost: setup starts over, or stops saying the file changed.
func TestSetupWhileTheClientWrites(t *testing.T) {
	const size = 4 << 20
	home, env := setupUser(t, map[string]string{"memory": "memory-mcp"}, size)
	start := time.Now()
	runIn(t, env, home, "setup", "claude-code", "--command", "/opt/toolsift")
	took := time.Since(start)
	const rounds = 8
	for round := range rounds {
		home, env := setupUser(t, map[string]string{"memory": "memory-mcp"}, size)
		path := filepath.Join(home, ".claude.json")
		clientWrote := make(chan error, 1)
		cmd := exec.Command(bin, "setup", "claude-code", "--command", "/opt/toolsift")
		cmd.Env, cmd.Dir = env, home
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(took * time.Duration(round) / rounds)
			clientWrote <- bumpStartups(path)
		}()
		err := cmd.Wait()
		if err := <-clientWrote; err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		var f map[string]any
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatalf("round %d: ~/.claude.json is not JSON: %v", round, err)
		}
		if f["numStartups"] != 1.0 {
			t.Fatalf("round %d: the client's write was lost (numStartups %v); setup: %v\n%s", round, f["numStartups"], err, out.String())
		}
		if err != nil && !strings.Contains(out.String(), "changed while toolsift was") {
			t.Fatalf("round %d: setup failed without saying the file changed: %v\n%s", round, err, out.String())
		}
	}
}

// bumpStartups does what a client does to its file: read it, change a key, write it back.
func bumpStartups(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var f map[string]any
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	f["numStartups"] = f["numStartups"].(float64) + 1
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".client-tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// TestSetupKilledMidway: setup killed with SIGKILL while it writes a large file leaves no
// backup the next run trips on, and no temporary file (which holds the user's secrets) once
// the next run is done.
func TestSetupKilledMidway(t *testing.T) {
	home, env := setupUser(t, map[string]string{"memory": "memory-mcp", "fs": "fs-mcp"}, 4<<20)
	state := filepath.Join(home, ".local", "state")
	for round := range 4 {
		cmd := exec.Command(bin, "setup", "claude-code", "--command", "/opt/toolsift")
		cmd.Env, cmd.Dir = env, home
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed as soon as it writes a file of its own: the backup, or a temporary file.
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			if writing(home, round) {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		// Whatever the kill left, undo (if anything was switched) then setup work.
		runIn(t, env, home, "setup", "claude-code", "--undo")
		if out, code := runIn(t, env, home, "setup", "claude-code", "--command", "/opt/toolsift"); code != 0 {
			t.Fatalf("round %d: setup after a killed setup = %d\n%s", round, code, out)
		}
		if out, code := runIn(t, env, home, "setup", "claude-code", "--undo"); code != 0 || strings.Contains(out, "parse") {
			t.Fatalf("round %d: undo = %d\n%s", round, code, out)
		}
		got := claudeServers(t, home)
		if _, ok := got["memory"]; !ok || got["fs"] == nil || got["toolsift"] != nil {
			t.Fatalf("round %d: after undo the servers are %v", round, got)
		}
		var temps []string
		filepath.Walk(home, func(p string, info os.FileInfo, err error) error {
			if err == nil && strings.Contains(filepath.Base(p), ".toolsift-") {
				temps = append(temps, p)
			}
			return nil
		})
		if len(temps) > 0 {
			t.Fatalf("round %d: temporary files left: %v", round, temps)
		}
		if entries, _ := os.ReadDir(filepath.Join(state, "toolsift", "setup")); len(entries) > 0 {
			t.Fatalf("round %d: setup's state left after undo: %v", round, entries)
		}
	}
}

// writing reports whether a setup in home has started writing a file: a backup or a
// temporary file, beside ~/.claude.json or in the state folder. Odd rounds wait for the
// backup to be partly written, so that kills land at different points.
func writing(home string, round int) bool {
	found := false
	filepath.Walk(home, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		name := filepath.Base(p)
		if strings.Contains(name, ".toolsift-") || name == "backup" {
			found = found || round%2 == 0 || info.Size() > 0
		}
		return nil
	})
	return found
}
