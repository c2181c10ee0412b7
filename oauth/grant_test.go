package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestKey(t *testing.T) {
	same := [][2]string{
		{"https://mcp.example.com/v1/mcp", "HTTPS://MCP.Example.com/v1/mcp"},
		{"https://mcp.example.com/v1/mcp", "https://mcp.example.com/v1/mcp/"},
		{"https://mcp.example.com/v1/mcp", "https://mcp.example.com/v1/mcp#frag"},
	}
	for _, p := range same {
		if Key(p[0]) != Key(p[1]) {
			t.Errorf("Key(%q) != Key(%q)", p[0], p[1])
		}
	}
	other := [][2]string{
		{"https://a.example/mcp", "https://b.example/mcp"},
		{"https://a.example/mcp", "http://a.example/mcp"},
		{"https://a.example/mcp", "https://a.example:8443/mcp"},
		{"https://a.example/mcp", "https://a.example/mcp2"},
		{"https://a.example/a.b", "https://a.example/a_b"},
	}
	for _, p := range other {
		if Key(p[0]) == Key(p[1]) {
			t.Errorf("Key(%q) == Key(%q): two servers would share a grant", p[0], p[1])
		}
	}
	if k := Key("https://x/../../etc"); strings.ContainsAny(k, "/.") {
		t.Errorf("Key = %q, not a plain file name", k)
	}
}

// TestGrantOfAnEarlierLayout: a grant stored under the server's name moves under its key
// when it is for the configured URL, and is never used for another.
func TestGrantOfAnEarlierLayout(t *testing.T) {
	ctx := context.Background()
	store := &FileStore{Dir: t.TempDir()}
	tokens := &Tokens{Store: store, Dir: store.Dir}
	store.Save(ctx, "jira", &Grant{Server: "jira", URL: "https://a.example/mcp", AccessToken: "at-a"})

	_, err := tokens.Grant(ctx, "jira", "https://b.example/mcp")
	var moved *MovedError
	if !errors.As(err, &moved) || !errors.Is(err, ErrNoGrant) || !strings.Contains(err.Error(), "toolsift auth login jira") {
		t.Fatalf("another URL's grant: %v, want a MovedError that is ErrNoGrant", err)
	}
	src := tokens.Source("jira", "https://b.example/mcp", nil)
	if tok, err := src.Token(ctx); tok != "" || err == nil {
		t.Errorf("Token for another URL = %q, %v; want none and a sign-in error", tok, err)
	}
	g, err := tokens.Grant(ctx, "jira", "https://a.example/mcp/")
	if err != nil || g.AccessToken != "at-a" {
		t.Fatalf("the same URL's grant: %+v, %v", g, err)
	}
	if _, err := store.Load(ctx, "jira"); !errors.Is(err, ErrNoGrant) {
		t.Errorf("the grant stayed under the name: %v", err)
	}
	if g, err := store.Load(ctx, Key("https://a.example/mcp")); err != nil || g.AccessToken != "at-a" {
		t.Errorf("the grant is not under its key: %+v, %v", g, err)
	}
}

// TestTransportKeepsTheTokenAtItsOrigin: the token is sent to the grant's origin only.
func TestTransportKeepsTheTokenAtItsOrigin(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	ctx := context.Background()
	store := &FileStore{Dir: t.TempDir()}
	home := "https://home.example/mcp"
	store.Save(ctx, Key(home), &Grant{Server: "s", URL: home, AccessToken: "at-1", Expiry: time.Now().Add(time.Hour)})
	hc := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Source: (&Tokens{Store: store, Dir: store.Dir}).Source("s", home, nil)}}
	_, err := hc.Get(srv.URL + "/mcp")
	if err == nil || !strings.Contains(err.Error(), "another origin") || len(got) != 0 {
		t.Errorf("a request to another origin: %v, the server saw %q", err, got)
	}
}

func TestExpiresIn(t *testing.T) {
	max := int64(maxLifetime / time.Second)
	for _, c := range []struct {
		in   string
		want int64
	}{
		{`3600`, 3600},
		{`"3600"`, 3600},
		{`3600.5`, 3600},
		{`10000000000`, 10000000000},
		{`1e300`, max},
		{`-5`, -5},
		{`-1e300`, 0},
		{`"soon"`, 0},
		{`null`, 0},
	} {
		if got := expiresIn(json.RawMessage(c.in)); got != c.want {
			t.Errorf("expiresIn(%s) = %d, want %d", c.in, got, c.want)
		}
	}
	// What is stored never lies in the past nor overflows, whatever the number.
	now := time.Now()
	for _, in := range []string{`10000000000`, `9223372036854775807`, `1e300`} {
		g, err := grantFromAnswer(t, in, now)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Expiry.After(now) || g.Lifetime > maxLifetime {
			t.Errorf("expires_in %s: expiry %v, lifetime %v", in, g.Expiry, g.Lifetime)
		}
	}
}

// grantFromAnswer runs a token request against a server answering with expires_in.
func grantFromAnswer(t *testing.T, expires string, now time.Time) (*Grant, error) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"at","token_type":"Bearer","expires_in":` + expires + `}`))
	}))
	defer srv.Close()
	return tokenRequest(context.Background(), srv.Client(), srv.URL, Client{ID: "c"}, map[string][]string{}, Grant{}, now)
}

func TestWebURL(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"https://auth.example/authorize", true},
		{"http://127.0.0.1:8080/authorize", true},
		{"http://localhost/authorize", true},
		{"http://[::1]:9/authorize", true},
		{"http://auth.example/authorize", false},
		{"file:///etc/passwd", false},
		{"smb://attacker/share/setup.exe", false},
		{"javascript:alert(1)", false},
		{"https:///no-host", false},
		{"https://auth.example/\x1b[2J", false},
		{"", false},
	} {
		if err := webURL(c.in); (err == nil) != c.ok {
			t.Errorf("webURL(%q) = %v, want ok %v", c.in, err, c.ok)
		}
	}
}

// TestMovedErrorHidesKeys: a URL's user info and query, where a key may be written, stay
// out of the message, which can reach a log or the model.
func TestMovedErrorHidesKeys(t *testing.T) {
	err := &MovedError{Server: "s", From: "https://user:pw-123@a.example/mcp?key=k-123", To: "https://b.example/mcp?token=t-123"}
	for _, secret := range []string{"pw-123", "k-123", "t-123"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q in %q", secret, err.Error())
		}
	}
	if !strings.Contains(err.Error(), "https://a.example/mcp") {
		t.Errorf("the server is not named: %q", err.Error())
	}
}
