package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The real MCP clients the client tests run (client_*_test.go), pinned in package.json. The
// tests assert how these versions treat MCP tool lists, so another version fails loudly
// instead of passing or failing for reasons nobody checked.
var pinnedClients = map[string]struct{ path, version string }{
	"claude":   {"node_modules/.bin/claude", "2.1.328"},
	"codex":    {"node_modules/.bin/codex", "0.171.0"},
	"gemini":   {"node_modules/.bin/gemini", "0.61.0"},
	"opencode": {"node_modules/opencode-linux-x64/bin/opencode", "1.18.33"},
}

// clientBin returns the absolute path of a pinned client, failing (not skipping) when it is
// missing or is another version. env is the environment to run `--version` in: some clients
// write to their home even then. The npm launchers need their native optional packages;
// without them they fail here, with their own message, rather than mid-scenario.
func clientBin(t *testing.T, name string, env []string) string {
	t.Helper()
	pin := pinnedClients[name]
	p, err := filepath.Abs(pin.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `npm ci --prefix tests` (with optional dependencies)", p)
	}
	cmd := exec.Command(p, "--version")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s\nrun `npm ci --prefix tests` (with optional dependencies)", p, err, out)
	}
	if !strings.Contains(string(out), pin.version) {
		t.Fatalf("%s is %q, want %s: run `npm ci --prefix tests`", p, strings.TrimSpace(string(out)), pin.version)
	}
	return p
}
