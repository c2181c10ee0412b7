//go:build unix

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledParentStopsToolsift (issue 39, fault 15): the process that started toolsift is
// killed with SIGKILL while its own parent, the client, still holds toolsift's stdin and
// stdout, so no end of input ever comes. toolsift must notice its parent's end and stop,
// stopping its server the normal way, within 5s. The parent is the npm package's Node
// launcher (where the attack found it) and a plain shell.
func TestKilledParentStopsToolsift(t *testing.T) {
	cases := []struct {
		name   string
		parent func(t *testing.T, cfg string) []string
	}{
		{"sh", func(t *testing.T, cfg string) []string {
			// "; exit" keeps sh from exec'ing toolsift in its own place.
			return []string{"sh", "-c", `"$0" --config "$1"; exit $?`, bin, cfg}
		}},
		{"npm launcher", func(t *testing.T, cfg string) []string {
			return []string{nodeLauncher(t), "--config", cfg}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pids := t.TempDir()
			cfg := config(t, fmt.Sprintf("mcpServers:\n  up:\n    command: %q\n    args: [\"--pid-dir\", %q]\n", fixtureBin, pids))
			argv := tc.parent(t, cfg)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = isolatedEnv(t)
			// The client's pipes, held by the test for its whole length: Wait must not close them.
			inR, inW, _ := os.Pipe()
			outR, outW, _ := os.Pipe()
			defer inW.Close()
			defer outR.Close()
			logf, _ := os.Create(filepath.Join(t.TempDir(), "stderr"))
			defer logf.Close()
			cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logf
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			inR.Close()
			outW.Close()
			var ts, up int
			eventually(t, 20*time.Second, "the parent to start toolsift, and toolsift its server", func() bool {
				if kids := childrenOf(t, cmd.Process.Pid); len(kids) == 1 {
					ts = kids[0]
				}
				if started := starts(t, pids); len(started) == 1 {
					up = started[0]
				}
				return ts != 0 && up != 0
			})
			// So that a failure leaves nothing behind.
			t.Cleanup(func() { syscall.Kill(ts, syscall.SIGKILL); syscall.Kill(up, syscall.SIGKILL) })
			time.Sleep(300 * time.Millisecond) // toolsift is serving
			cmd.Process.Kill()
			cmd.Wait()
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && (running(ts) || running(up)) {
				time.Sleep(50 * time.Millisecond)
			}
			if running(ts) || running(up) {
				log, _ := os.ReadFile(logf.Name())
				t.Fatalf("5s after kill -9 of toolsift's parent: toolsift %d running %v, its server %d running %v\n%s", ts, running(ts), up, running(up), log)
			}
		})
	}
}

// TestLauncherPassesArgumentBytes (issue 39, fault 16): an argument that is not UTF-8, a
// config named caf\xe9.json, reaches toolsift as those bytes through npm's `toolsift`. Node
// would pass caf\uFFFD.json, another file, which here holds another config. The Node
// launcher, where it remains, refuses such an argument (on Linux, which shows it the bytes)
// rather than changing it.
func TestLauncherPassesArgumentBytes(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "caf\xe9.json")
	other := filepath.Join(dir, "caf\uFFFD.json")
	for path, name := range map[string]string{real: "bytes_kept", other: "bytes_replaced"} {
		if err := os.WriteFile(path, fmt.Appendf(nil, `{"mcpServers": {%q: {"command": %q}}}`, name, fixtureBin), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(ts string) (string, int) {
		cmd := exec.Command(ts, "list", "--config", real)
		cmd.Env = isolatedEnv(t)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run(launcher(t))
	if code != 0 || !strings.Contains(out, "bytes_kept") || strings.Contains(out, "bytes_replaced") {
		t.Errorf("npm's toolsift list --config caf\\xe9.json: exit %d, want bytes_kept's config:\n%s", code, out)
	}
	if runtime.GOOS != "linux" {
		return
	}
	out, code = run(nodeLauncher(t))
	if strings.Contains(out, "bytes_replaced") || code != 2 || !strings.Contains(out, "is not UTF-8") {
		t.Errorf("the Node launcher with caf\\xe9.json: exit %d, want 2 and a refusal, never the other file:\n%s", code, out)
	}
}
