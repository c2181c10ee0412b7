package upstream

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/config"
)

func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := "/bin/sh"
	tests := []struct {
		name string
		srv  config.Server
		want string // in the error; "" for none
	}{
		{"a program on PATH", config.Server{Command: "sh"}, ""},
		{"an absolute program", config.Server{Command: sh}, ""},
		{"a program in an existing cwd", config.Server{Command: "./file", Cwd: dir}, ""},
		{"missing cwd", config.Server{Command: sh, Cwd: filepath.Join(dir, "gone")}, "cwd " + filepath.Join(dir, "gone") + " does not exist"},
		{"cwd is a file", config.Server{Command: sh, Cwd: file}, "is a file, not a folder"},
		{"command is a folder", config.Server{Command: dir}, "is a folder, not a program"},
		{"command line in command", config.Server{Command: "node /path/index.js --stdio"}, `put the program alone in command and its arguments in args, as in command: node and args: ["/path/index.js", "--stdio"]`},
		{"command line with a path", config.Server{Command: "/usr/bin/node /srv/index.js"}, `command: /usr/bin/node and args: ["/srv/index.js"]`},
		{"unknown program", config.Server{Command: "no-such-program-xyz"}, `"no-such-program-xyz" not found on PATH`},
		{"missing absolute program", config.Server{Command: filepath.Join(dir, "nope")}, "does not exist: fix command"},
		{"relative program missing from cwd", config.Server{Command: "./nope", Cwd: dir}, "does not exist"},
	}
	for _, tt := range tests {
		err := preflight(tt.srv)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: preflight = %v, want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: preflight = %v, want %q in it", tt.name, err, tt.want)
		}
	}
}
