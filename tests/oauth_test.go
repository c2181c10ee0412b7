package tests

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// oauthUser is a user of toolsift with a configuration and a state folder of their own, and
// a "browser" that approves every sign-in page at once.
type oauthUser struct {
	t   *testing.T
	env []string
	cfg string
}

func newOAuthUser(t *testing.T, yaml string, browserFlags ...string) *oauthUser {
	env := append(isolatedEnv(t), "HOME="+t.TempDir(), "BROWSER="+strings.Join(append([]string{fixtureBin}, append(browserFlags, "--browse")...), " "))
	return &oauthUser{t: t, env: env, cfg: config(t, yaml)}
}

func (u *oauthUser) run(args ...string) (string, string, int) {
	u.t.Helper()
	cmd := exec.Command(bin, append(args, "--config", u.cfg)...)
	cmd.Env = u.env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		u.t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func (u *oauthUser) login(name string) {
	u.t.Helper()
	out, errOut, code := u.run("auth", "login", name, "--timeout", "20s")
	if code != 0 || !strings.Contains(out, name+": signed in") {
		u.t.Fatalf("auth login %s = %d\n%s%s", name, code, out, errOut)
	}
}

// serve starts toolsift over stdio as a client would, in the user's environment.
func (u *oauthUser) serve() *client {
	u.t.Helper()
	c := startWith(u.t, u.env, bin, "--config", u.cfg, "--log-level", "debug")
	u.t.Cleanup(func() { c.checkStdout() })
	c.initialize()
	return c
}

// callUntil calls a tool through call_tool until its result satisfies ok, or the time is up.
func callUntil(c *client, name string, within time.Duration, ok func(CallResult) bool) CallResult {
	deadline := time.Now().Add(within)
	for {
		res, _ := c.call("call_tool", map[string]any{"name": name, "arguments": map[string]any{}})
		if ok(res) || time.Now().After(deadline) {
			return res
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func noSecretsIn(t *testing.T, d *authDouble, where string, texts ...string) {
	t.Helper()
	all := strings.Join(texts, "\n")
	for _, s := range d.secretsIssued() {
		if strings.Contains(all, s) {
			t.Errorf("a token the server issued is in %s", where)
		}
	}
}

func signedIn(r CallResult) bool { return !r.IsError && strings.Contains(r.Text(), "signed in") }

// TestOAuthDynamicRegistration: an Atlassian-like server (dynamic registration, protected
// resource metadata only at the root well-known URL, a challenge without resource_metadata):
// a sign-in with a scripted browser, then a real MCP client calls its tool through
// toolsift; no token reaches a log.
func TestOAuthDynamicRegistration(t *testing.T) {
	d := newAuthDouble(t).start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  atl:\n    url: %s/mcp\n", d.rs.URL))

	// Before the sign-in, toolsift says what to run.
	out, errOut, code := u.run("status", "--wait", "10s")
	if code == 0 || !strings.Contains(out, "needs-login") || !strings.Contains(errOut, "toolsift auth login atl") {
		t.Fatalf("status before sign-in = %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = u.run("auth", "login", "atl", "--timeout", "20s")
	if code != 0 || !strings.Contains(out, "atl: signed in") || !strings.Contains(errOut, "/authorize?") {
		t.Fatalf("auth login = %d\n%s%s", code, out, errOut)
	}
	c := u.serve()
	res := callUntil(c, "atl__whoami", 20*time.Second, signedIn)
	if !signedIn(res) {
		t.Fatalf("call after sign-in: %+v", res)
	}
	status, _, code := u.run("auth", "status")
	if code != 0 || !strings.HasPrefix(status, "atl  signed in with "+d.as.URL) {
		t.Errorf("auth status = %d\n%s", code, status)
	}
	for _, r := range d.tokenRequests() {
		if r.resource != d.rs.URL+"/mcp" {
			t.Errorf("a %s token request named resource %q", r.grant, r.resource)
		}
	}
	noSecretsIn(t, d, "toolsift's output or log", out, errOut, status, c.Stderr())
	grants, _ := filepath.Glob(filepath.Join(envValue(u.env, "XDG_STATE_HOME"), "toolsift", "oauth", "*.json"))
	for _, g := range grants {
		st, err := os.Stat(g)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", g, st.Mode().Perm())
		}
		dir, _ := os.Stat(filepath.Dir(g))
		if dir.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", filepath.Dir(g), dir.Mode().Perm())
		}
	}
	if len(grants) != 1 {
		t.Errorf("sign-ins on disk: %v", grants)
	}
}

// TestOAuthPreRegisteredClients: servers without dynamic registration take the user's own
// OAuth app: GitHub's demands the secret at the token endpoint even with PKCE; Slack's
// takes it only in the body (client_secret_post).
func TestOAuthPreRegisteredClients(t *testing.T) {
	for _, tt := range []struct {
		name    string
		methods []string
		want    string
	}{
		{"github", nil, "basic"},
		{"slack", []string{"client_secret_post"}, "post"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newAuthDouble(t)
			d.dcr, d.pathPRM, d.authMethods = false, true, tt.methods
			d.secrets["app-123"] = "app-secret-456789"
			d.start()
			yaml := fmt.Sprintf("mcpServers:\n  %s:\n    url: %s/mcp\n", tt.name, d.rs.URL)
			// Without the app's credentials: what to register, and where to put it.
			u := newOAuthUser(t, yaml)
			_, errOut, code := u.run("auth", "login", tt.name, "--timeout", "20s")
			if code == 0 || !strings.Contains(errOut, "offers no dynamic registration: register an OAuth app") || !strings.Contains(errOut, "mcpServers."+tt.name+".oauth") {
				t.Errorf("login without a client = %d\n%s", code, errOut)
			}
			u = newOAuthUser(t, yaml+"    oauth:\n      clientId: app-123\n      clientSecret: ${APP_SECRET}\n      scopes: [repo]\n")
			u.env = append(u.env, "APP_SECRET=app-secret-456789")
			u.login(tt.name)
			reqs := d.tokenRequests()
			if len(reqs) != 1 || !reqs[0].ok || reqs[0].auth != tt.want {
				t.Errorf("token requests %+v, want one with the secret sent by %s", reqs, tt.want)
			}
			res := callUntil(u.serve(), tt.name+"__whoami", 20*time.Second, signedIn)
			if !signedIn(res) {
				t.Errorf("call: %+v", res)
			}
		})
	}
}

// TestOAuthRefreshAndRevocation: a 2 s access token is refreshed while toolsift serves, with
// the resource named again; once the user revokes the app, a call says to sign in, the
// server is not asked again and again, and a new sign-in made with the CLI while toolsift
// serves is picked up within seconds.
func TestOAuthRefreshAndRevocation(t *testing.T) {
	d := newAuthDouble(t)
	d.ttl = 2 * time.Second
	d.start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n    alwaysLoad: true\n", d.rs.URL))
	u.login("s")
	c := u.serve()
	if res := callUntil(c, "s__whoami", 20*time.Second, signedIn); !signedIn(res) {
		t.Fatalf("first call: %+v", res)
	}
	time.Sleep(3 * time.Second)
	if res, _ := c.call("s__whoami", map[string]any{}); !signedIn(res) {
		t.Fatalf("call after the token expired: %+v", res)
	}
	refreshes := 0
	for _, r := range d.tokenRequests() {
		if r.grant == "refresh_token" && r.ok {
			refreshes++
			if r.resource != d.rs.URL+"/mcp" {
				t.Errorf("a refresh named resource %q", r.resource)
			}
		}
	}
	if refreshes == 0 {
		t.Fatal("no refresh while serving")
	}

	d.revokeAll()
	time.Sleep(3 * time.Second) // the access token expires
	res := callUntil(c, "s__whoami", 10*time.Second, func(r CallResult) bool { return strings.Contains(r.Text(), "auth login") })
	if !res.IsError || !strings.Contains(res.Text(), "toolsift auth login s") {
		t.Fatalf("call after revocation: %+v", res)
	}
	before := len(d.tokenRequests())
	time.Sleep(4 * time.Second)
	if n := len(d.tokenRequests()) - before; n > 0 {
		t.Errorf("%d more token requests while the sign-in is refused: a refresh loop", n)
	}
	out, _, code := u.run("status", "--wait", "10s")
	if code == 0 || !strings.Contains(out, "needs-login") {
		t.Errorf("status after revocation = %d\n%s", code, out)
	}

	u.login("s")
	picked := time.Now()
	if res := callUntil(c, "s__whoami", 10*time.Second, signedIn); !signedIn(res) {
		t.Fatalf("the new sign-in was not picked up: %+v", res)
	}
	if d := time.Since(picked); d > 5*time.Second {
		t.Errorf("the new sign-in took %v to be picked up, want under 5s", d)
	}
	noSecretsIn(t, d, "toolsift's log", c.Stderr())
}

// TestOAuthRefusals: a sign-in fails closed, with an error that says what is wrong, when the
// metadata's issuer is not the authorization server's, when the server offers no PKCE, when
// the answer's state was tampered with, and when the callback port is taken.
func TestOAuthRefusals(t *testing.T) {
	t.Run("issuer mismatch", func(t *testing.T) {
		d := newAuthDouble(t)
		d.issuer = "https://evil.example"
		d.start()
		u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL))
		if _, errOut, code := u.run("auth", "login", "s", "--timeout", "10s"); code == 0 || !strings.Contains(errOut, `is for the issuer "https://evil.example"`) {
			t.Errorf("login = %d\n%s", code, errOut)
		}
	})
	t.Run("no PKCE", func(t *testing.T) {
		d := newAuthDouble(t)
		d.noPKCE = true
		d.start()
		u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL))
		if _, errOut, code := u.run("auth", "login", "s", "--timeout", "10s"); code == 0 || !strings.Contains(errOut, "does not offer PKCE with S256") {
			t.Errorf("login = %d\n%s", code, errOut)
		}
	})
	for _, param := range []string{"state", "iss"} {
		t.Run(param+" tampered", func(t *testing.T) {
			d := newAuthDouble(t).start()
			u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL), "--tamper", param)
			// A wrong state is ignored until the time is up; a wrong issuer fails at once.
			_, errOut, code := u.run("auth", "login", "s", "--timeout", "3s")
			if code == 0 || !strings.Contains(errOut, param+" mismatch") || !strings.Contains(errOut, "nothing was saved") {
				t.Errorf("login = %d\n%s", code, errOut)
			}
			if len(d.tokenRequests()) > 0 {
				t.Errorf("the code was exchanged after a %s mismatch", param)
			}
		})
	}
	t.Run("busy callback port", func(t *testing.T) {
		d := newAuthDouble(t).start()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := ln.Addr().(*net.TCPAddr).Port
		u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n    oauth: {clientId: c, redirectUri: \"http://127.0.0.1:%d/callback\"}\n", d.rs.URL, port))
		if _, errOut, code := u.run("auth", "login", "s", "--timeout", "10s"); code == 0 || !strings.Contains(errOut, fmt.Sprintf("port %d of mcpServers.s.oauth.redirectUri is in use", port)) {
			t.Errorf("login = %d\n%s", code, errOut)
		}
	})
	t.Run("no browser comes back", func(t *testing.T) {
		d := newAuthDouble(t).start()
		u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  s:\n    url: %s/mcp\n", d.rs.URL))
		start := time.Now()
		_, errOut, code := u.run("auth", "login", "s", "--timeout", "1s", "--no-browser")
		if code == 0 || !strings.Contains(errOut, "no sign-in within 1s") || time.Since(start) > 10*time.Second {
			t.Errorf("login = %d after %v\n%s", code, time.Since(start), errOut)
		}
	})
}

// TestUnavailableServerSaysItsFix (issue 33, row 4): a tool under a server that needs a
// sign-in, called by its name or through call_tool before the server's tools are known,
// gets that server's state and its one fix; tool_search names the server with the fix; a
// tool under a server that is up but lacks it is no such tool of that server.
func TestUnavailableServerSaysItsFix(t *testing.T) {
	d := newAuthDouble(t).start()
	u := newOAuthUser(t, fmt.Sprintf("mcpServers:\n  jira:\n    url: %s/mcp\n  gh:\n    command: %q\n", d.rs.URL, fixtureBin))
	c := u.serve()
	const fix = "jira (needs-login): the user must run toolsift auth login jira"
	eventually(t, 15*time.Second, "jira to need a sign-in", func() bool {
		return slices.Contains(c.search("issue", 3).Unavailable, fix)
	})
	direct, _ := c.call("jira__get_issue", map[string]any{"key": "X-1"})
	viaCallTool, _ := c.call("call_tool", map[string]any{"name": "jira__search", "arguments": map[string]any{}})
	for what, res := range map[string]CallResult{"a direct call": direct, "call_tool": viaCallTool} {
		if !res.IsError || !strings.Contains(res.Text(), "cannot be called: server "+fix) {
			t.Errorf("%s while jira needs a sign-in = %q, want the server's fix", what, res.Text())
		}
	}
	other, _ := c.call("call_tool", map[string]any{"name": "gh__no_such_tool", "arguments": map[string]any{}})
	if !other.IsError || !strings.Contains(other.Text(), `server "gh" offers no such tool`) {
		t.Errorf("a missing tool of a running server = %q", other.Text())
	}
}
