package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMistakesNameTheFix: configuration mistakes found by a probe (issue 23, row 10) give an
// error that says what to change, from the built binary.
func TestMistakesNameTheFix(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, yaml string
		want       string // in status's output or its error
	}{
		{"missing cwd", "mcpServers:\n  s:\n    command: " + fixtureBin + "\n    cwd: " + filepath.Join(dir, "gone") + "\n",
			"cwd " + filepath.Join(dir, "gone") + " does not exist"},
		{"command is a folder", "mcpServers:\n  s:\n    command: " + dir + "\n", "is a folder, not a program"},
		{"command line in command", "mcpServers:\n  s:\n    command: node /path/index.js\n",
			`put the program alone in command and its arguments in args, as in command: node and args: ["/path/index.js"]`},
		{"empty server name", "mcpServers:\n  \"\":\n    command: x\n", "a server's name is empty"},
		// Issue 33, row 1: the hint names the variable as written; only values are secrets.
		{"unset variable named like a secret", "mcpServers:\n  gh:\n    command: " + fixtureBin + "\n    env: {GITHUB_PERSONAL_ACCESS_TOKEN: \"${TOOLSIFT_TEST_UNSET_TOKEN}\"}\n",
			"or write ${TOOLSIFT_TEST_UNSET_TOKEN:-default}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "status", "--wait", "10s", "--config", config(t, tt.yaml))
			if code == 0 || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("status = %d\n%s%s\nwant %q", code, out, errOut, tt.want)
			}
		})
	}

	t.Run("escaped ${", func(t *testing.T) {
		cfg := config(t, "mcpServers:\n  s:\n    command: "+fixtureBin+"\n    description: 'costs $${PRICE} a call'\n")
		out, errOut, code := runCLI(t, "status", "--wait", "20s", "--config", cfg)
		if code != 0 {
			t.Errorf("status = %d\n%s%s", code, out, errOut)
		}
	})

	t.Run("config that never ends", func(t *testing.T) {
		if _, err := os.Stat("/dev/zero"); err != nil {
			t.Skip("no /dev/zero")
		}
		start := time.Now()
		_, errOut, code := runCLI(t, "status", "--config", "/dev/zero")
		if code == 0 || !strings.Contains(errOut, "is it the right file?") || time.Since(start) > 10*time.Second {
			t.Errorf("status --config /dev/zero = %d after %v\n%s", code, time.Since(start), errOut)
		}
	})
}
