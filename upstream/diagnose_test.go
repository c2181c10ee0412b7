package upstream

import (
	"slices"
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	npx := "npm error code ENOENT\nnpm error syscall open\nnpm error path /root/.npm/_npx/a705c79b42eea4c8/package.json\nnpm error errno -2\n" +
		"npm error enoent Could not read package.json: Error: ENOENT: no such file or directory, open '/root/.npm/_npx/a705c79b42eea4c8/package.json'\nnpm error enoent\n"
	nodeModule := `node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/home/me/mcp/server-memroy/dist/index.js'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.20.2
`
	python := `Traceback (most recent call last):
  File "/srv/server.py", line 3, in <module>
    import mcp
ModuleNotFoundError: No module named 'mcp'
`
	goPanic := "panic: open /etc/app.yaml: no such file or directory\n\ngoroutine 1 [running]:\nmain.main()\n\t/src/main.go:12 +0x1d\nexit status 2\n"
	tests := []struct{ name, stderr, want string }{
		{"empty", "", ""},
		{"blank", "  \n\n ", ""},
		{"fatal", "fatal: TOKEN missing\n", "fatal: TOKEN missing"},
		{"error then blank", "starting\nError: GITHUB_TOKEN is not set\n  \n", "Error: GITHUB_TOKEN is not set"},
		{"node missing module, version last", nodeModule, "Error: Cannot find module '/home/me/mcp/server-memroy/dist/index.js'"},
		{"python traceback", python, "ModuleNotFoundError: No module named 'mcp'"},
		{"go panic", goPanic, "panic: open /etc/app.yaml: no such file or directory"},
		{"error before later chatter", "Error: bad config\nshutting down\n", "Error: bad config"},
		{"no error word: last real line", "listening\nport 3000 in use\nNode.js v22.1.0\n", "port 3000 in use"},
		{"only a banner", "Node.js v20.20.2\n", ""},
		{"npx cache", npx, "npx's cache folder /root/.npm/_npx/a705c79b42eea4c8 is broken"},
		{"npx cache, windows", `npm error enoent ENOENT: open 'C:\Users\me\AppData\Local\npm-cache\_npx\0123abcd\package.json'`, `npx's cache folder C:\Users\me\AppData\Local\npm-cache\_npx\0123abcd is broken`},
		{"enoent", "ENOENT: no such file or directory, open '/srv/app/package.json'", "ENOENT: no such file or directory, open '/srv/app/package.json'"},
		{"long line", strings.Repeat("é", 300), strings.Repeat("é", 200) + "…"},
		{"errors is not an error", "errorsWritten=0\n", "errorsWritten=0"},
	}
	for _, tt := range tests {
		if got := explain(tt.stderr); !strings.HasPrefix(got, tt.want) || (tt.want == "" && got != "") {
			t.Errorf("%s: explain(%.60q) = %q, want it to start with %q", tt.name, tt.stderr, got, tt.want)
		}
	}
}

func TestTailLines(t *testing.T) {
	tests := []struct {
		stderr string
		n      int
		want   []string
	}{
		{"", 3, nil},
		{"a\n\n  \nb\nc\n", 2, []string{"b", "c"}},
		{"a\nb", 5, []string{"a", "b"}},
		{"  indented\r\n", 1, []string{"  indented"}},
	}
	for _, tt := range tests {
		if got := tailLines(tt.stderr, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("tailLines(%q, %d) = %q, want %q", tt.stderr, tt.n, got, tt.want)
		}
	}
}
