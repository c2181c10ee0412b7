package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// freePort returns a loopback port nothing listens on, for a service whose public URL must
// be written in its config before it starts.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// team is a toolsift served over HTTP to a team that signs in at d.
type team struct {
	url  string // toolsift's base URL, also its publicUrl
	logs func() string
	env  []string
	cfg  string // the config file
}

// serveTeam serves toolsift on a free port with auth.oidc at d, extra added to the config's
// top level and servers as its mcpServers.
func serveTeam(t *testing.T, d *idp, extra, servers string) team {
	t.Helper()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf("publicUrl: %s\nauth:\n  oidc:\n    issuer: %s\n    userClaim: email\n    groupsClaim: groups\n    scopes: [mcp]\n    clientId: toolsift\n%s\nmcpServers:%s", base, d.issuer(), extra, servers))
	url, logs := serveHTTPEnv(t, env, cfg, "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	if url != base {
		t.Fatalf("toolsift serves at %s, want %s", url, base)
	}
	return team{url: base, logs: logs, env: env, cfg: cfg}
}

// TestSignInRefusesForgedTokens (issue 34): with auth.oidc, toolsift is an OAuth protected
// resource: its metadata names the team's issuer, a request without a token gets a 401 that
// says where to sign in, and an access token is taken only when signed by one of the
// issuer's current keys with an allowed algorithm, for toolsift's own URL, from the
// issuer, within its validity. A refused token gets 401 and not a word of why.
func TestSignInRefusesForgedTokens(t *testing.T) {
	d := newIDP(t)
	tm := serveTeam(t, d, "", githubFixture(t, ""))
	resource := tm.url + "/mcp"

	resp, body := do(t, http.MethodGet, tm.url+"/.well-known/oauth-protected-resource/mcp", nil, "")
	var md struct {
		Resource string   `json:"resource"`
		AS       []string `json:"authorization_servers"`
		Scopes   []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal(body, &md); resp.StatusCode != 200 || err != nil || md.Resource != resource || !slices.Equal(md.AS, []string{d.issuer()}) || !slices.Equal(md.Scopes, []string{"mcp"}) {
		t.Fatalf("resource metadata: %d %s", resp.StatusCode, body)
	}
	resp, _ = do(t, http.MethodPost, resource, nil, initBody)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, `resource_metadata="`+tm.url+`/.well-known/oauth-protected-resource/mcp"`) || !strings.Contains(ch, `scope="mcp"`) {
		t.Fatalf("no token: %d, WWW-Authenticate %q", resp.StatusCode, ch)
	}

	good := d.claims("ann", resource)
	with := func(k string, v any) map[string]any {
		c := maps.Clone(good)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	stranger := newIDP(t) // another issuer's keys
	tests := []struct {
		name string
		tok  func() string
		want int
	}{
		{"good", func() string { return d.sign(good) }, 200},
		{"expired", func() string { return d.sign(with("exp", time.Now().Add(-10*time.Minute).Unix())) }, 401},
		{"not yet valid", func() string { return d.sign(with("nbf", time.Now().Add(10*time.Minute).Unix())) }, 401},
		{"no exp", func() string { return d.sign(with("exp", nil)) }, 401},
		{"wrong aud", func() string { return d.sign(with("aud", "https://other.example.com/mcp")) }, 401},
		{"aud of the issuer", func() string { return d.sign(with("aud", d.issuer())) }, 401},
		{"wrong iss", func() string { return d.sign(with("iss", stranger.issuer())) }, 401},
		{"no sub", func() string { return d.sign(with("sub", nil)) }, 401},
		{"alg none", func() string { return unsigned(good) }, 401},
		{"HS256 keyed with the public key", func() string { return signJWT(t, jose.HS256, d.publicKeyBytes(), d.kids[0], good) }, 401},
		{"a key not in the set", func() string { return stranger.sign(good) }, 401},
		{"a known kid, another key", func() string { return signJWT(t, jose.RS256, stranger.keys[0], d.kids[0], good) }, 401},
		{"garbage", func() string { return "a.b.c" }, 401},
		{"signature cut", func() string { s := d.sign(good); return s[:strings.LastIndex(s, ".")+1] }, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.tok()
			resp, body := do(t, http.MethodPost, resource, map[string]string{"Authorization": "Bearer " + tok}, initBody)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.want, body)
			}
			if tt.want != 401 {
				return
			}
			if ch := resp.Header.Get("WWW-Authenticate"); !strings.Contains(ch, `error="invalid_token"`) || strings.Contains(ch, "error_description") {
				t.Errorf("WWW-Authenticate %q: want invalid_token and no description", ch)
			}
			for _, leak := range []string{"expir", "aud", "iss", "signature", "alg", "key", "oidc", "nbf", "sub"} {
				if strings.Contains(strings.ToLower(string(body)), leak) {
					t.Errorf("the 401 tells why (%q): %s", leak, body)
				}
			}
		})
	}

	// Made-up key IDs do not make a request to the provider each.
	fetched := d.jwksFetches()
	for range 20 {
		do(t, http.MethodPost, resource, map[string]string{"Authorization": "Bearer " + signJWT(t, jose.RS256, stranger.keys[0], randomHex(), good)}, initBody)
	}
	if n := d.jwksFetches() - fetched; n > 2 {
		t.Errorf("20 tokens with unknown key IDs fetched the key set %d times", n)
	}
	// Rotation: a token signed with a new key is taken (the key set is fetched again); once
	// the old key leaves the set, a token signed with it is not.
	old := d.sign(good)
	time.Sleep(1100 * time.Millisecond) // keysRefetch
	d.rotate()
	d.dropOld()
	if resp, _ := do(t, http.MethodPost, resource, map[string]string{"Authorization": "Bearer " + d.sign(good)}, initBody); resp.StatusCode != 200 {
		t.Errorf("a token signed with the rotated-in key: %d", resp.StatusCode)
	}
	if resp, _ := do(t, http.MethodPost, resource, map[string]string{"Authorization": "Bearer " + old}, initBody); resp.StatusCode != 401 {
		t.Errorf("a token signed with a key rotated out: %d", resp.StatusCode)
	}
	if logs := tm.logs(); strings.Contains(logs, old) || strings.Contains(logs, strings.Split(old, ".")[2]) {
		t.Errorf("a token reached the log")
	}
}

// TestSignInWithTheTypeScriptSDK (issue 34): the official TypeScript SDK's client, with its
// OAuth provider, finds toolsift's resource metadata from the 401, registers with the
// authorization server it names, signs in with PKCE for toolsift's URL (RFC 8707), and
// then lists and searches.
func TestSignInWithTheTypeScriptSDK(t *testing.T) {
	d := newIDP(t)
	tm := serveTeam(t, d, "", githubFixture(t, ""))
	cmd := exec.Command("node", "tsoauth.mjs", tm.url+"/mcp", "bea", "create an issue")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("tsoauth.mjs: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Tools  []string `json:"tools"`
		Search string   `json:"search"`
		Aud    any      `json:"aud"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !slices.Contains(got.Tools, "tool_search") || !strings.Contains(got.Search, "github__create_issue") {
		t.Errorf("signed in, listed %v and found:\n%s", got.Tools, got.Search)
	}
	if got.Aud != tm.url+"/mcp" {
		t.Errorf("the SDK's token is for %v, want toolsift's resource %s/mcp", got.Aud, tm.url)
	}
}
