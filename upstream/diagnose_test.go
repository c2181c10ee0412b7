package upstream

import (
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	npx := "npm error code ENOENT\nnpm error syscall open\nnpm error path /root/.npm/_npx/a705c79b42eea4c8/package.json\nnpm error errno -2\n" +
		"npm error enoent Could not read package.json: Error: ENOENT: no such file or directory, open '/root/.npm/_npx/a705c79b42eea4c8/package.json'\nnpm error enoent\n"
	tests := []struct{ stderr, want string }{
		{"", ""},
		{"  \n\n ", ""},
		{"fatal: TOKEN missing\n", "fatal: TOKEN missing"},
		{"starting\nError: GITHUB_TOKEN is not set\n  \n", "Error: GITHUB_TOKEN is not set"},
		{npx, "npx's cache folder /root/.npm/_npx/a705c79b42eea4c8 is broken"},
		{`npm error enoent ENOENT: open 'C:\Users\me\AppData\Local\npm-cache\_npx\0123abcd\package.json'`, `npx's cache folder C:\Users\me\AppData\Local\npm-cache\_npx\0123abcd is broken`},
		{"ENOENT: no such file or directory, open '/srv/app/package.json'", "ENOENT: no such file or directory, open '/srv/app/package.json'"},
		{strings.Repeat("é", 300), strings.Repeat("é", 200) + "…"},
	}
	for _, tt := range tests {
		if got := explain(tt.stderr); !strings.HasPrefix(got, tt.want) || (tt.want == "" && got != "") {
			t.Errorf("explain(%.60q) = %q, want it to start with %q", tt.stderr, got, tt.want)
		}
	}
}
