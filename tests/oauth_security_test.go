package tests

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Issue 39's attacks on the sign-in (1-8), each against the built binary with real
// authorization server doubles over HTTP.

// withConfig is the same user (environment, state folder, browser) with another config.
func (u *oauthUser) withConfig(yaml string) *oauthUser {
	return &oauthUser{t: u.t, env: u.env, cfg: config(u.t, yaml)}
}

func grantFiles(u *oauthUser) []string {
	files, _ := filepath.Glob(filepath.Join(envValue(u.env, "XDG_STATE_HOME"), "toolsift", "oauth", "*.json"))
	return files
}

// TestOAuthGrantBelongsToItsServer (attack 1): projects A and B each have a server named
// jira, at different URLs. A's sign-in must never reach B's server, nor be refreshed on
// B's refusal. And two names that a file name would fold together keep two grants.
func TestOAuthGrantBelongsToItsServer(t *testing.T) {
	a, b := newAuthDouble(t).start(), newAuthDouble(t).start()
	projA := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  jira:\n    url: %s/mcp\n", a.rs.URL))
	projA.login("jira")
	projB := projA.withConfig(fmt.Sprintf("mcpServers:\n  jira:\n    url: %s/mcp\n", b.rs.URL))
	c := projB.serve()
	res := callUntil(c, "jira__whoami", 5*time.Second, signedIn)
	if signedIn(res) {
		t.Fatalf("B's jira answered as signed in with A's sign-in: %+v", res)
	}
	if !strings.Contains(c.Stderr(), "toolsift auth login jira") {
		t.Errorf("B's jira does not say to sign in:\n%s", c.Stderr())
	}
	for _, tok := range b.bearersSeen() {
		if slices.Contains(a.secretsIssued(), tok) {
			t.Errorf("B's server was sent A's access token")
		}
	}
	for _, r := range a.tokenRequests() {
		if r.grant == "refresh_token" {
			t.Errorf("A's grant was refreshed on B's refusal")
		}
	}
	status, _, _ := projB.run("auth", "status")
	if !strings.Contains(status, "stored sign-in for "+a.rs.URL+"/mcp that no server") {
		t.Errorf("auth status in B does not list A's sign-in as unused:\n%s", status)
	}
	// A still works, and B signs in on its own.
	if res := callUntil(projA.serve(), "jira__whoami", 20*time.Second, signedIn); !signedIn(res) {
		t.Errorf("A after B: %+v", res)
	}
	projB.login("jira")
	if res := callUntil(projB.serve(), "jira__whoami", 20*time.Second, signedIn); !signedIn(res) {
		t.Errorf("B after its own sign-in: %+v", res)
	}

	// a.b and a_b: one file name once; two grants now.
	dots := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  a.b:\n    url: %s/mcp\n    prefix: ab\n  a_b:\n    url: %s/mcp\n", a.rs.URL, b.rs.URL))
	dots.login("a.b")
	dots.login("a_b")
	if n := len(grantFiles(dots)); n != 2 {
		t.Errorf("a.b and a_b left %d grant files, want 2", n)
	}
	c = dots.serve()
	for _, name := range []string{"ab__whoami", "a_b__whoami"} {
		if res := callUntil(c, name, 20*time.Second, signedIn); !signedIn(res) {
			t.Errorf("%s: %+v", name, res)
		}
	}
	noSecretsIn(t, a, "B's log", c.Stderr())
}

// TestOAuthTokenStaysAtItsOrigin (attack 2): a signed-in server answers 307 to another
// origin. Neither its bearer token nor a configured credential header goes there.
func TestOAuthTokenStaysAtItsOrigin(t *testing.T) {
	var mu sync.Mutex
	var sent []string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		http.Error(w, "nothing here", http.StatusNotFound)
	}))
	defer evil.Close()
	d := newAuthDouble(t).start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n  keyed:\n    url: %s/mcp\n    headers: {X-Api-Key: k-0123456789}\n", d.rs.URL, d.rs.URL))
	u.login("s")
	d.redirectTo(evil.URL + "/mcp")
	c := u.serve()
	res := callUntil(c, "s__whoami", 3*time.Second, signedIn)
	if signedIn(res) {
		t.Fatalf("called through the redirect: %+v", res)
	}
	out, _, _ := u.run("status", "--wait", "5s")
	mu.Lock()
	defer mu.Unlock()
	for _, s := range sent {
		if s != "|" {
			t.Errorf("the other origin received credentials: %q", s)
		}
	}
	if !strings.Contains(out+c.Stderr(), "another origin") {
		t.Errorf("nothing says the redirect was refused:\n%s\n%s", out, c.Stderr())
	}
}

// TestOAuthOnlyWebEndpointsReachTheBrowser (attack 3): metadata naming a file:, smb: or
// plain-http authorization endpoint never reaches $BROWSER, and its control bytes never
// reach the terminal.
func TestOAuthOnlyWebEndpointsReachTheBrowser(t *testing.T) {
	for _, endpoint := range []string{
		"file:///etc/passwd",
		"smb://attacker/share/setup.exe",
		"https://as.example/authorize\x1b]0;pwned\x07\r\x1b[2K",
		"http://192.0.2.1/authorize",
		"javascript:alert(1)",
	} {
		t.Run(endpoint, func(t *testing.T) {
			d := newAuthDouble(t)
			d.authEndpoint = endpoint
			d.start()
			opened := filepath.Join(t.TempDir(), "opened")
			browser := filepath.Join(t.TempDir(), "browser.sh")
			os.WriteFile(browser, []byte("#!/bin/sh\necho \"$@\" >> "+opened+"\n"), 0o755)
			u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL))
			u.env = append(u.env, "BROWSER="+browser)
			out, errOut, code := u.run("auth", "login", "s", "--timeout", "3s")
			if code == 0 {
				t.Errorf("login went on with authorization endpoint %q:\n%s%s", endpoint, out, errOut)
			}
			if got, err := os.ReadFile(opened); err == nil {
				t.Errorf("the browser was handed %q", got)
			}
			if strings.ContainsAny(out+errOut, "\x1b\x07\r") {
				t.Errorf("control bytes reached the terminal: %q", out+errOut)
			}
			if !strings.Contains(errOut, "authorization_endpoint") {
				t.Errorf("the error does not name the endpoint refused: %s", errOut)
			}
		})
	}
}

// TestOAuthLogoutOfAServerThatIsGone (attack 4): after the server left the config, its
// sign-in is listed by auth status and forgotten by auth logout.
func TestOAuthLogoutOfAServerThatIsGone(t *testing.T) {
	d := newAuthDouble(t).start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  jira:\n    url: %s/mcp\n", d.rs.URL))
	u.login("jira")
	gone := u.withConfig("mcpServers: {}\n")
	status, errOut, code := gone.run("auth", "status")
	if code != 0 || !strings.Contains(status, "jira  stored sign-in for "+d.rs.URL+"/mcp") || !strings.Contains(status, "toolsift auth logout jira") {
		t.Errorf("auth status without the server = %d\n%s%s", code, status, errOut)
	}
	out, errOut, code := gone.run("auth", "logout", "jira")
	if code != 0 || !strings.Contains(out, "signed out") {
		t.Errorf("auth logout of a server that is gone = %d\n%s%s", code, out, errOut)
	}
	if files := grantFiles(u); len(files) != 0 {
		t.Errorf("grants left on disk: %v", files)
	}
	if out, _, _ := gone.run("auth", "logout", "jira"); !strings.Contains(out, "not signed in") {
		t.Errorf("a second logout: %s", out)
	}
}

// TestOAuthKeyringThatNeverAnswers (attack 5): a Secret Service that accepts the
// connection and never answers costs its timeout once per process, not on every grant.
func TestOAuthKeyringThatNeverAnswers(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "bus")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	var yaml strings.Builder
	yaml.WriteString("mcpServers:\n")
	for i := range 4 {
		fmt.Fprintf(&yaml, "  s%d:\n    url: http://127.0.0.1:9/s%d\n    oauth: {clientId: c}\n", i, i)
	}
	u := newOAuthUser(t, yaml.String())
	u.env = append(u.env, "TOOLSIFT_TOKEN_STORE=", "DBUS_SESSION_BUS_ADDRESS=unix:path="+sock)
	start := time.Now()
	out, errOut, code := u.run("auth", "status")
	took := time.Since(start)
	if code != 0 || strings.Count(out, "needs login") != 4 {
		t.Errorf("auth status = %d\n%s%s", code, out, errOut)
	}
	if took > 6*time.Second {
		t.Errorf("auth status of 4 servers took %v with a keyring that never answers, want one timeout (3s)", took)
	}
	if n := strings.Count(errOut, "keyring is not used"); n != 1 {
		t.Errorf("said %d times that the keyring is not used, want once:\n%s", n, errOut)
	}
}

// TestOAuthKilledMidRefresh (attack 6): a toolsift killed (-9) while it refreshes leaves
// no lock that holds up the next one.
func TestOAuthKilledMidRefresh(t *testing.T) {
	d := newAuthDouble(t)
	d.ttl = 2 * time.Second
	d.start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL))
	u.login("s")
	holding := make(chan struct{})
	d.mu.Lock()
	d.holding = holding
	d.mu.Unlock()
	time.Sleep(2 * time.Second) // the token is now expired: the next use refreshes
	first := exec.Command(bin, "--config", u.cfg)
	first.Env = u.env
	stdin, _ := first.StdinPipe()
	first.Stdout = discardWriter{}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer first.Process.Kill()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	select {
	case <-holding:
	case <-time.After(20 * time.Second):
		t.Fatal("the first toolsift never refreshed")
	}
	first.Process.Signal(syscall.SIGKILL)
	first.Wait()
	start := time.Now()
	res := callUntil(u.serve(), "s__whoami", 20*time.Second, signedIn)
	if !signedIn(res) {
		t.Fatalf("after the kill: %+v", res)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the next toolsift took %v to refresh after the first was killed", took)
	}
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestOAuthStrayCallbacks (attack 7): answers at the callback that are not the sign-in's
// (a wrong state, none, another path) are ignored and counted; the real one signs in.
func TestOAuthStrayCallbacks(t *testing.T) {
	d := newAuthDouble(t).start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL), "--stray")
	out, errOut, code := u.run("auth", "login", "s", "--timeout", "20s")
	if code != 0 || !strings.Contains(out, "s: signed in") {
		t.Fatalf("login with stray answers first = %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "Ignored 3 answer(s)") {
		t.Errorf("the stray answers were not counted:\n%s", errOut)
	}
}

// TestOAuthHugeExpiresIn (attack 8): expires_in 10000000000 is a long-lived token, not an
// expired one refreshed on every use.
func TestOAuthHugeExpiresIn(t *testing.T) {
	for _, v := range []any{10000000000, "10000000000", 1e300} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			d := newAuthDouble(t)
			d.expiresIn = v
			d.start()
			u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL))
			u.login("s")
			for range 3 {
				if out, _, _ := u.run("auth", "status"); strings.Contains(out, "expired") || !strings.Contains(out, "signed in") {
					t.Errorf("auth status: %s", out)
				}
			}
			c := u.serve()
			for range 3 {
				if res := callUntil(c, "s__whoami", 20*time.Second, signedIn); !signedIn(res) {
					t.Fatalf("call: %+v", res)
				}
			}
			for _, r := range d.tokenRequests() {
				if r.grant == "refresh_token" {
					t.Errorf("refreshed a token that expires in %v seconds", v)
				}
			}
		})
	}
}
