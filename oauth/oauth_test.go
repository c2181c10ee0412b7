package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
)

// TestDiscoverOrder: discovery asks for metadata where the MCP specification says, in its
// order, and takes the first that answers.
func TestDiscoverOrder(t *testing.T) {
	tests := []struct {
		name      string
		serve     map[string]string // path -> document; {AS} and {RS} stand for the servers' URLs
		challenge string            // resource_metadata, if any
		asPath    string
		want      []string // the requests, in order
		wantErr   string
	}{
		{"path-specific PRM, root AS metadata",
			map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"{RS}/mcp","authorization_servers":["{AS}"]}`},
			"", "", []string{"RS /.well-known/oauth-protected-resource/mcp", "AS /.well-known/oauth-authorization-server"}, ""},
		{"root PRM after a 404",
			map[string]string{"/.well-known/oauth-protected-resource": `{"resource":"{RS}","authorization_servers":["{AS}"]}`},
			"", "", []string{"RS /.well-known/oauth-protected-resource/mcp", "RS /.well-known/oauth-protected-resource", "AS /.well-known/oauth-authorization-server"}, ""},
		{"the challenge's PRM only",
			map[string]string{"/custom.json": `{"resource":"{RS}/mcp","authorization_servers":["{AS}"]}`},
			"/custom.json", "", []string{"RS /custom.json", "AS /.well-known/oauth-authorization-server"}, ""},
		{"an AS with a path: OIDC path-appended last",
			map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"{RS}/mcp","authorization_servers":["{AS}/tenant"]}`},
			"", "/tenant/.well-known/openid-configuration",
			[]string{"RS /.well-known/oauth-protected-resource/mcp", "AS /.well-known/oauth-authorization-server/tenant", "AS /.well-known/openid-configuration/tenant", "AS /tenant/.well-known/openid-configuration"}, ""},
		{"a resource of another server",
			map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"https://other.example/mcp","authorization_servers":["{AS}"]}`},
			"", "", nil, "is for https://other.example/mcp"},
		{"no authorization server named",
			map[string]string{"/.well-known/oauth-protected-resource/mcp": `{"resource":"{RS}/mcp","authorization_servers":[]}`},
			"", "", nil, "names no authorization server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []string
			var as, rs *httptest.Server
			handler := func(who string, docs map[string]string) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					got = append(got, who+" "+r.URL.Path)
					mu.Unlock()
					doc, ok := docs[r.URL.Path]
					if !ok {
						http.NotFound(w, r)
						return
					}
					fmt.Fprint(w, strings.NewReplacer("{AS}", as.URL, "{RS}", rs.URL).Replace(doc))
				}
			}
			asDocs := map[string]string{}
			asPath := tt.asPath
			issuerPath := ""
			if asPath == "" {
				asPath = "/.well-known/oauth-authorization-server"
			} else {
				issuerPath = "/tenant"
			}
			asDocs[asPath] = `{"issuer":"{AS}` + issuerPath + `","authorization_endpoint":"{AS}/a","token_endpoint":"{AS}/t","code_challenge_methods_supported":["S256"]}`
			as = httptest.NewServer(handler("AS", asDocs))
			defer as.Close()
			rs = httptest.NewServer(handler("RS", tt.serve))
			defer rs.Close()
			ch := Challenge{}
			if tt.challenge != "" {
				ch.ResourceMetadata = rs.URL + tt.challenge
			}
			md, err := Discover(context.Background(), http.DefaultClient, rs.URL+"/mcp", ch)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Discover = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("requests\n got %q\nwant %q", got, tt.want)
			}
			if md.TokenEndpoint != as.URL+"/t" || !strings.HasPrefix(md.Resource, rs.URL) {
				t.Errorf("metadata %+v", md)
			}
		})
	}
}

func TestChallengeFromAnotherOriginIsIgnored(t *testing.T) {
	server, _ := url.Parse("https://mcp.example.com/mcp")
	got := prmURLs(server, "https://attacker.example/prm")
	if len(got) != 2 || strings.Contains(got[0], "attacker") {
		t.Errorf("prmURLs = %q, want the server's own well-known URLs", got)
	}
}

func TestChooseScope(t *testing.T) {
	tests := []struct {
		name      string
		oc        *config.OAuth
		challenge string
		prev      *Grant
		supported []string
		want      string
	}{
		{"nothing known: omitted", nil, "", nil, nil, ""},
		{"the server's list", nil, "", nil, []string{"a", "b"}, "a b"},
		{"the challenge's over the list", nil, "x", nil, []string{"a", "b"}, "x"},
		{"configured and challenged", &config.OAuth{Scopes: []string{"repo"}}, "x repo", nil, nil, "repo x"},
		{"a step-up: granted and wanted", nil, "basic", &Grant{Scope: "basic", Wanted: []string{"basic", "write"}}, nil, "basic write"},
		{"granted alone is not asked again", nil, "", &Grant{Scope: "old"}, []string{"a"}, "a"},
	}
	for _, tt := range tests {
		if got := chooseScope(tt.oc, tt.challenge, tt.prev, tt.supported); got != tt.want {
			t.Errorf("%s: chooseScope = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestCovers(t *testing.T) {
	server, _ := url.Parse("https://h.example/v1/mcp/")
	for resource, want := range map[string]bool{
		"https://h.example/v1/mcp":   true,
		"https://h.example/v1/mcp/":  true,
		"https://h.example":          true,
		"https://h.example/v1":       true,
		"https://H.EXAMPLE/v1/mcp":   true,
		"https://h.example/v1/mc":    false,
		"http://h.example/v1/mcp":    false,
		"https://h.example:8443/v1":  false,
		"https://evil.example/v1":    false,
		"https://h.example/v1/mcp/x": false,
	} {
		if got := covers(resource, server); got != want {
			t.Errorf("covers(%q) = %v, want %v", resource, got, want)
		}
	}
}

// tokenServer answers refresh requests, counting them; each rotates the refresh token.
type tokenServer struct {
	*httptest.Server
	refreshes atomic.Int32
	mu        sync.Mutex
	live      map[string]bool // refresh tokens not yet spent
	resources []string
}

func newTokenServer(t *testing.T) *tokenServer {
	ts := &tokenServer{live: map[string]bool{"rt-0": true}}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.resources = append(ts.resources, r.PostForm.Get("resource"))
		rt := r.PostForm.Get("refresh_token")
		if !ts.live[rt] {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		delete(ts.live, rt)
		n := ts.refreshes.Add(1)
		next := fmt.Sprintf("rt-%d", n)
		ts.live[next] = true
		json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("at-%d", n), "refresh_token": next, "expires_in": 3600})
	}))
	t.Cleanup(ts.Close)
	return ts
}

func expiredGrant(ts *tokenServer) *Grant {
	return &Grant{Server: "s", URL: "https://rs/mcp", Resource: "https://rs/mcp", TokenEndpoint: ts.URL, ClientID: "c", AuthMethod: "none",
		AccessToken: "at-old", RefreshToken: "rt-0", Expiry: time.Now().Add(-time.Minute), Saved: time.Now()}
}

// TestRefreshIsSerialised: callers that all find the token expired share one refresh, in
// this process and across two of them (two Tokens over one store): a refresh token rotates,
// and a spent one sent again is refused.
func TestRefreshIsSerialised(t *testing.T) {
	ts := newTokenServer(t)
	dir := t.TempDir()
	store := &FileStore{Dir: filepath.Join(dir, "oauth")}
	if err := store.Save(context.Background(), Key("https://rs/mcp"), expiredGrant(ts)); err != nil {
		t.Fatal(err)
	}
	processes := []*Tokens{{Store: store, Dir: store.Dir}, {Store: store, Dir: store.Dir}}
	var wg sync.WaitGroup
	tokens := make([]string, 16)
	errs := make([]error, 16)
	for i := range tokens {
		wg.Go(func() {
			tokens[i], errs[i] = processes[i%2].Source("s", "https://rs/mcp", nil).Token(context.Background())
		})
	}
	wg.Wait()
	for i := range tokens {
		if errs[i] != nil || tokens[i] != "at-1" {
			t.Errorf("caller %d: %q, %v; want at-1", i, tokens[i], errs[i])
		}
	}
	if n := ts.refreshes.Load(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	for _, r := range ts.resources {
		if r != "https://rs/mcp" {
			t.Errorf("a refresh named resource %q", r)
		}
	}
}

// TestRefusedRefreshIsNotRetried: a refresh the authorization server refuses marks the
// grant as needing a sign-in; later calls say so without asking the server again.
func TestRefusedRefreshIsNotRetried(t *testing.T) {
	ts := newTokenServer(t)
	ts.live = map[string]bool{} // rt-0 was revoked
	store := &FileStore{Dir: t.TempDir()}
	store.Save(context.Background(), Key("https://rs/mcp"), expiredGrant(ts))
	src := (&Tokens{Store: store, Dir: store.Dir}).Source("s", "https://rs/mcp", nil)
	for i := range 5 {
		_, err := src.Token(context.Background())
		var needs *NeedsLoginError
		if !errors.As(err, &needs) || !strings.Contains(err.Error(), "toolsift auth login s") {
			t.Fatalf("call %d: %v, want a NeedsLoginError", i, err)
		}
	}
	if n := len(ts.resources); n != 1 {
		t.Errorf("%d refresh requests, want 1", n)
	}
	if src.Ready(context.Background()) {
		t.Error("a refused grant counts as ready")
	}
	g, _ := store.Load(context.Background(), Key("https://rs/mcp"))
	if g.RefreshToken != "" || g.AccessToken != "" || g.Refused == "" {
		t.Errorf("the refused grant kept its tokens: %+v", g)
	}
}

// TestTransport: the token goes with each request; a 401 is refreshed once and retried; a
// 403 insufficient_scope becomes a ScopeError and is remembered for the next sign-in; a
// server that needs no sign-in is reached as it is.
func TestTransport(t *testing.T) {
	ts := newTokenServer(t)
	var scopeNeeded atomic.Bool
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 64)
		n, _ := r.Body.Read(body)
		switch auth := r.Header.Get("Authorization"); {
		case auth == "" && r.URL.Path == "/open":
			fmt.Fprint(w, "open")
		case auth != "Bearer at-1":
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
		case scopeNeeded.Load():
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="read write"`)
			w.WriteHeader(http.StatusForbidden)
		default:
			fmt.Fprintf(w, "ok %s", body[:n])
		}
	}))
	defer rs.Close()
	store := &FileStore{Dir: t.TempDir()}
	g := expiredGrant(ts)
	g.Expiry = time.Now().Add(time.Hour) // not expired: the server refuses it all the same
	g.URL = rs.URL + "/mcp"
	store.Save(context.Background(), Key(g.URL), g)
	tokens := &Tokens{Store: store, Dir: store.Dir}
	hc := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Source: tokens.Source("s", g.URL, nil)}}
	resp, err := hc.Post(rs.URL+"/mcp", "application/json", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := resp.Body.Read(buf)
	if string(buf[:n]) != "ok hello" || ts.refreshes.Load() != 1 {
		t.Errorf("after a 401: %q with %d refreshes; want the request replayed after one", buf[:n], ts.refreshes.Load())
	}
	scopeNeeded.Store(true)
	_, err = hc.Post(rs.URL+"/mcp", "application/json", strings.NewReader("x"))
	var scope *ScopeError
	if !errors.As(err, &scope) || scope.Scope != "read write" {
		t.Errorf("a 403 insufficient_scope: %v", err)
	}
	if saved, _ := store.Load(context.Background(), Key(g.URL)); fmt.Sprint(saved.Wanted) != "[read write]" {
		t.Errorf("wanted scopes saved: %q", saved.Wanted)
	}
	store.Delete(context.Background(), Key(g.URL))
	plain := &http.Client{Transport: &Transport{Base: http.DefaultTransport, Source: (&Tokens{Store: store, Dir: store.Dir}).Source("s", g.URL, nil)}}
	if resp, err := plain.Get(rs.URL + "/open"); err != nil || resp.StatusCode != 200 {
		t.Errorf("a server that needs no sign-in: %v, %v", resp, err)
	}
	if _, err := plain.Get(rs.URL + "/mcp"); err == nil || !strings.Contains(err.Error(), "toolsift auth login s") {
		t.Errorf("a Bearer challenge without a sign-in: %v", err)
	}
}

func TestFileStoreModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oauth")
	s := &FileStore{Dir: dir}
	if _, err := s.Load(context.Background(), "x"); !errors.Is(err, ErrNoGrant) {
		t.Errorf("Load of nothing: %v", err)
	}
	if err := s.Save(context.Background(), "../x y", &Grant{Server: "x", AccessToken: "t"}); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || strings.Contains(entries[0].Name(), "/") {
		t.Fatalf("files: %v", entries)
	}
	st, _ := os.Stat(filepath.Join(dir, entries[0].Name()))
	ds, _ := os.Stat(dir)
	if st.Mode().Perm() != 0o600 || ds.Mode().Perm() != 0o700 {
		t.Errorf("modes %v, %v; want 0600 in 0700", st.Mode().Perm(), ds.Mode().Perm())
	}
	if g, err := s.Load(context.Background(), "../x y"); err != nil || g.AccessToken != "t" {
		t.Errorf("Load = %+v, %v", g, err)
	}
}

// TestRefreshFollowsTheClock: a token is used as it is until its expiry comes near on the
// Tokens' clock, then refreshed once; the clock alone decides, not the wall time of the test.
func TestRefreshFollowsTheClock(t *testing.T) {
	ts := newTokenServer(t)
	start := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	now := start
	store := &FileStore{Dir: t.TempDir()}
	g := expiredGrant(ts)
	g.AccessToken, g.Expiry, g.Saved = "at-0", start.Add(time.Hour), start
	if err := store.Save(context.Background(), Key("https://rs/mcp"), g); err != nil {
		t.Fatal(err)
	}
	tokens := &Tokens{Store: store, Dir: store.Dir, Now: func() time.Time { return now }}
	src := tokens.Source("s", "https://rs/mcp", nil)
	steps := []struct {
		after     time.Duration // since start
		want      string
		refreshes int32
	}{
		{0, "at-0", 0},
		{50 * time.Minute, "at-0", 0},
		{time.Hour + time.Minute, "at-1", 1}, // expired: refreshed
		{90 * time.Minute, "at-1", 1},        // the new one lasts an hour from the refresh
		{3 * time.Hour, "at-2", 2},
	}
	for _, st := range steps {
		now = start.Add(st.after)
		tok, err := src.Token(context.Background())
		if err != nil || tok != st.want || ts.refreshes.Load() != st.refreshes {
			t.Errorf("at +%v: %q, %v, %d refreshes; want %q, %d", st.after, tok, err, ts.refreshes.Load(), st.want, st.refreshes)
		}
	}
}
