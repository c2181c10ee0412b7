package tests

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamedTokens (issue 34): toolsift token create prints a token once and keeps only its
// hash; the HTTP service asks for a token as soon as one exists, takes the new one at once,
// refuses a wrong one, and refuses the revoked one at once, staying closed with none left;
// list shows names, not tokens.
func TestNamedTokens(t *testing.T) {
	env := isolatedEnv(t)
	token := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"token"}, args...)...)
		cmd.Env = env
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("toolsift token %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return strings.TrimSpace(stdout.String()), stderr.String()
	}
	url, _ := serveHTTPEnv(t, env, config(t, "mcpServers:"+githubFixture(t, "")))
	init := func(tok string) int {
		h := map[string]string{}
		if tok != "" {
			h["Authorization"] = "Bearer " + tok
		}
		r, _ := do(t, http.MethodPost, url+"/mcp", h, initBody)
		return r.StatusCode
	}
	if code := init(""); code != http.StatusOK {
		t.Fatalf("initialize with no token while none exists = %d", code)
	}
	tok, note := token("create", "ci-runner")
	if !strings.HasPrefix(tok, "tsk_") || !strings.Contains(note, "shown this once") {
		t.Fatalf("token create printed %q (%s)", tok, note)
	}
	state := envValue(env, "XDG_STATE_HOME")
	data, _ := os.ReadFile(filepath.Join(state, "toolsift", "tokens.json"))
	if len(data) == 0 || strings.Contains(string(data), tok) {
		t.Errorf("tokens.json is missing or holds the token itself:\n%s", data)
	}
	for _, tt := range []struct {
		tok  string
		want int
	}{{"", http.StatusUnauthorized}, {tok + "x", http.StatusUnauthorized}, {tok, http.StatusOK}} {
		if code := init(tt.tok); code != tt.want {
			t.Errorf("initialize with token %q = %d, want %d", tt.tok, code, tt.want)
		}
	}
	if list, _ := token("list"); !strings.Contains(list, "ci-runner") || strings.Contains(list, tok) {
		t.Errorf("token list = %q", list)
	}
	token("revoke", "ci-runner")
	for _, tt := range []string{tok, ""} {
		if code := init(tt); code != http.StatusUnauthorized {
			t.Errorf("after revoking the last token, initialize with %q = %d, want 401: the service stays closed", tt, code)
		}
	}
}
