package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 23, rows 2 to 5: no secret reaches the model or a log.

// TestUnreachableServerKeepsItsKey: an HTTP server configured with ?api_key= goes away and
// the model calls its tool: the model learns the server is unreachable, never the key, and
// neither the log nor status shows it.
func TestUnreachableServerKeepsItsKey(t *testing.T) {
	const key = "SECRETKEY-0123456789"
	base, fx := startHTTPFixtureAt(t, "127.0.0.1:0")
	yaml := fmt.Sprintf("mcpServers:\n  web:\n    url: %q\n    alwaysLoad: true\n", base+"/mcp?api_key="+key)
	c := proxy(t, yaml)
	c.waitTool("web__echo")
	fx.cmd.Process.Kill()
	fx.cmd.Wait()
	res, _ := c.call("call_tool", map[string]any{"name": "web__echo", "arguments": map[string]any{"text": "hi"}})
	text := res.Text()
	if !res.IsError || !strings.Contains(text, `"web"`) || strings.Contains(text, key) {
		t.Errorf("call to a server that went away: isError %v, %q; want an error naming web, without the key", res.IsError, text)
	}
	out, errOut, _ := runCLI(t, "status", "--wait", "5s", "--config", config(t, yaml))
	if strings.Contains(out+errOut, key) || !strings.Contains(out, "api_key=[redacted]") {
		t.Errorf("status shows the key, or no redacted URL:\n%s%s", out, errOut)
	}
	time.Sleep(200 * time.Millisecond) // the log is written from a goroutine of its own
	if strings.Contains(c.Stderr(), key) {
		t.Errorf("the key is in toolsift's log")
	}
}

// TestServerStderrStaysInTheLog: a stdio server that prints the token it was given as it
// fails: the model learns that it failed and where the details are; the log has the
// detail, the token masked.
func TestServerStderrStaysInTheLog(t *testing.T) {
	const token = "ghp_0123456789abcdefABCDEF0123456789"
	mark := filepath.Join(t.TempDir(), "started")
	// Starts once for real; every later start fails, printing the token it was given.
	script := fmt.Sprintf(`if [ -e %q ]; then echo "starting" >&2; echo "Error: GitHub rejected token $GH_TOKEN" >&2; exit 1; fi; touch %q; exec %q --catalog %q`,
		mark, mark, fixtureBin, catalog(t, "github"))
	yaml := fmt.Sprintf("mcpServers:\n  gh:\n    command: sh\n    args: [\"-c\", %q]\n    env: {GH_TOKEN: %q}\n    alwaysLoad: [echo, crash]\n", script, token)
	c := proxy(t, yaml)
	c.waitTool("gh__crash")
	c.call("gh__crash", map[string]any{})
	res, _ := c.call("gh__echo", map[string]any{"text": "hi"})
	text := res.Text()
	if !res.IsError || !strings.Contains(text, `"gh"`) || !strings.Contains(text, "details in toolsift's log") {
		t.Errorf("call after the server failed: isError %v, %q; want an error naming gh and the log", res.IsError, text)
	}
	if strings.Contains(text, "ghp_") || strings.Contains(text, "rejected") {
		t.Errorf("the server's stderr reached the model: %q", text)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(c.Stderr(), "GitHub rejected token [redacted]") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if log := c.Stderr(); strings.Contains(log, token) || !strings.Contains(log, "GitHub rejected token [redacted]") {
		t.Errorf("the log should keep the detail with the token masked:\n%s", log)
	}
	out, _, _ := runCLI(t, "status", "--wait", "5s", "--config", config(t, yaml))
	if strings.Contains(out, token) || !strings.Contains(out, "stderr: Error: GitHub rejected token [redacted]") {
		t.Errorf("status should show the masked stderr line:\n%s", out)
	}
}

// TestEmbeddingsSecretsAreMasked: the embeddings URL's password and key and its API key
// never reach the log, even when the endpoint's error echoes the request; /embeddings is
// added to the path, not the query.
func TestEmbeddingsSecretsAreMasked(t *testing.T) {
	const password, key, apiKey = "PASSWORD-abc123", "QUERYKEY-def456", "sk-embed-0123456789abcdef"
	var mu sync.Mutex
	var paths []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"bad credentials: apiKey=%s, Authorization: %s, url %s"}}`, apiKey, r.Header.Get("Authorization"), r.URL.String())
	}))
	defer api.Close()
	u := strings.Replace(api.URL, "http://", "http://user:"+password+"@", 1) + "/v1?key=" + key
	yaml := fmt.Sprintf("search:\n  embeddings: {url: %q, model: m, apiKey: %q, timeout: 2s}\nmcpServers:%s", u, apiKey, githubFixture(t, "    alwaysLoad: [echo]\n"))
	c := proxy(t, yaml)
	c.waitTool("github__echo")
	c.search("create an issue", 3)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(paths)
		mu.Unlock()
		if n > 0 && strings.Contains(c.Stderr(), "bad credentials") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	log := c.Stderr()
	for _, secret := range []string{password, key, apiKey} {
		if strings.Contains(log, secret) {
			t.Errorf("%s is in the log", secret)
		}
	}
	if !strings.Contains(log, "bad credentials") {
		t.Errorf("the endpoint's error is not logged at all:\n%s", log)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[0] != "/v1/embeddings?key="+key {
		t.Errorf("requests went to %q, want /v1/embeddings?key=%s", paths, key)
	}
}

// TestRedirectDropsConfiguredHeaders: an HTTP server that answers 307 to another server
// does not get the configured headers sent there: the redirect is not followed at all
// (issue 39, attack 2), and status says why.
func TestRedirectDropsConfiguredHeaders(t *testing.T) {
	const secret = "x-api-key-0123456789"
	var mu sync.Mutex
	reached := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached++
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	redirector := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer redirector.Close()
	yaml := fmt.Sprintf("mcpServers:\n  r:\n    url: %q\n    headers: {X-Api-Key: %q, Authorization: \"Bearer %s\"}\n", redirector.URL+"/mcp", secret, secret)
	stdout, stderr, _ := runCLI(t, "status", "--wait", "5s", "--config", config(t, yaml))
	out := stdout + stderr
	mu.Lock()
	defer mu.Unlock()
	if reached != 0 {
		t.Errorf("the redirect to another server was followed (%d requests)", reached)
	}
	if !strings.Contains(out, "another origin") {
		t.Errorf("status does not say the redirect was refused:\n%s", out)
	}
}
