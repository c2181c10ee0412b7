package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/internal/mcptest"
)

// jiraDouble is an MCP server over streamable HTTP that takes only access tokens the
// provider double d issued for it (its own URL as aud), and whose tool whoami answers with
// the token's subject: who the call came from, as the server sees it.
type jiraDouble struct {
	srv *httptest.Server
	d   *idp
	// open lets every request but tools/call through without a token, as servers do that
	// ask for a sign-in only from the first call on.
	open bool

	mu      sync.Mutex           // guards the fields below
	auds    map[string]int       // aud of every token it was sent, good or not
	refused map[string]time.Time // sub -> tokens issued before this are refused (revoked)
}

type subKey struct{}

func newJiraDouble(t *testing.T, d *idp, open bool) *jiraDouble {
	j := &jiraDouble{d: d, open: open, auds: map[string]int{}, refused: map[string]time.Time{}}
	mcpSrv := server.NewMCPServer("jira", "1", server.WithToolCapabilities(true))
	mcpSrv.AddTool(mcp.Tool{Name: "whoami", Description: "Says which Jira user the call acts as.", RawInputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sub, _ := ctx.Value(subKey{}).(string)
			return mcp.NewToolResultText(sub), nil
		})
	h := server.NewStreamableHTTPServer(mcpSrv, server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, subKey{}, r.Header.Get("X-Test-Sub"))
	}))
	j.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			json.NewEncoder(w).Encode(map[string]any{"resource": j.srv.URL + "/mcp", "authorization_servers": []string{d.issuer()}})
			return
		}
		sub, ok := j.check(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if !ok && j.open && r.Header.Get("Authorization") == "" {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			ok = !bytes.Contains(body, []byte(`"tools/call"`))
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata=%q, error="invalid_token"`, j.srv.URL+"/.well-known/oauth-protected-resource/mcp"))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Set("X-Test-Sub", sub)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(j.srv.Close)
	return j
}

// check verifies an access token: signed by d, for this server, in date, not revoked.
func (j *jiraDouble) check(raw string) (string, bool) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", false
	}
	j.d.mu.Lock()
	keys := slices.Clone(j.d.keys)
	j.d.mu.Unlock()
	var c jwt.Claims
	for _, k := range keys {
		if tok.Claims(&k.PublicKey, &c) == nil {
			break
		}
		c = jwt.Claims{}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, a := range c.Audience {
		j.auds[a]++
	}
	if c.Subject == "" || !c.Audience.Contains(j.srv.URL+"/mcp") || c.Expiry == nil || c.Expiry.Time().Before(time.Now()) {
		return "", false
	}
	if before, ok := j.refused[c.Subject]; ok && !c.IssuedAt.Time().After(before) {
		return "", false
	}
	return c.Subject, true
}

// revoke refuses the tokens of user issued so far, as when they revoke the app.
func (j *jiraDouble) revoke(user string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refused["sub-"+user] = time.Now()
}

// browse opens link in a browser signed in at the provider double as user: it follows
// redirects, signing in as user at every authorization endpoint, and returns the last
// page's status and text.
func browse(t *testing.T, link, user string) (int, string) {
	t.Helper()
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range 10 {
		u, _ := url.Parse(link)
		if u.Path == "/authorize" {
			q := u.Query()
			q.Set("login_hint", user)
			u.RawQuery = q.Encode()
		}
		resp, err := hc.Get(u.String())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			return resp.StatusCode, string(body)
		}
		link = resp.Header.Get("Location")
	}
	t.Fatal("too many redirects")
	return 0, ""
}

// teamClient is an MCP client of a team's toolsift, signed in as one person.
type teamClient struct {
	*mcpclient.Client
	mu        sync.Mutex // guards elicited and completed
	elicited  []mcp.ElicitationParams
	completed []string
}

func (c *teamClient) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elicited = append(c.elicited, req.Params)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept}}, nil
}

// connectTeam connects to tm with tok; urlElicit declares URL-mode elicitation.
func connectTeam(t *testing.T, tm team, tok string, urlElicit bool) *teamClient {
	t.Helper()
	// With a GET stream: a notification outside any request (elicitation/complete) has no
	// other way.
	tr, err := transport.NewStreamableHTTP(tm.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}), transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := &teamClient{}
	opts := []mcpclient.ClientOption{mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	if urlElicit {
		opts = append(opts, mcpclient.WithElicitationHandler(c))
	}
	c.Client = mcpclient.NewClient(tr, opts...)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationElicitationComplete) {
			c.mu.Lock()
			c.completed = append(c.completed, fmt.Sprint(n.Params.AdditionalFields["elicitationId"]))
			c.mu.Unlock()
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if urlElicit {
		req.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{URL: &struct{}{}}
	}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (c *teamClient) whoami(t *testing.T) (string, bool) {
	t.Helper()
	res := mcptest.Call(t, c.Client, "jira__whoami", map[string]any{})
	return mcptest.Text(res), res.IsError
}

var linkPattern = func(base string) func(string) string {
	return func(text string) string {
		i := strings.Index(text, base+"/connect/")
		if i < 0 {
			return ""
		}
		return strings.FieldsFunc(text[i:], func(r rune) bool { return r == ' ' || r == ')' || r == '"' })[0]
	}
}

// TestEachActsAsThemselves (issue 34): on a team's toolsift, an OAuth server is signed in
// to by each person for themselves. Whoever has no sign-in is told how, with a link (sent
// as a URL elicitation to a client that declared it); the link signs in only the person it
// was made for; the server then sees each person's own token on their calls, across 1,000
// interleaved ones; and when one person's grant is revoked, only they are asked to sign in
// again. No token reaches the log or the audit log, and the server never sees toolsift's.
func TestEachActsAsThemselves(t *testing.T) {
	d := newIDP(t)
	jira := newJiraDouble(t, d, false)
	auditFile := t.TempDir() + "/audit.jsonl"
	tm := serveTeam(t, d, fmt.Sprintf("audit: {file: %q}", auditFile), githubFixture(t, "")+fmt.Sprintf("\n  jira:\n    url: %s/mcp\n", jira.srv.URL))
	annTok, bobTok := d.token("ann", tm.url+"/mcp"), d.token("bob", tm.url+"/mcp")
	ann, bob := connectTeam(t, tm, annTok, true), connectTeam(t, tm, bobTok, false)
	link := linkPattern(tm.url)

	// Nobody is signed in: each is told how, ann by an elicitation too.
	text, isErr := ann.whoami(t)
	annLink := link(text)
	if !isErr || annLink == "" || !strings.Contains(text, "sign in") {
		t.Fatalf("ann's first call: %s", text)
	}
	ann.mu.Lock()
	if len(ann.elicited) != 1 || ann.elicited[0].Mode != "url" || ann.elicited[0].URL != annLink || ann.elicited[0].ElicitationID == "" {
		t.Errorf("ann's client was sent %+v, want one URL elicitation of %s", ann.elicited, annLink)
	}
	ann.mu.Unlock()
	text, isErr = bob.whoami(t)
	bobLink := link(text)
	if !isErr || bobLink == "" || bobLink == annLink {
		t.Fatalf("bob's first call: %s (ann's link %s)", text, annLink)
	}
	res := mcptest.Call(t, bob.Client, "tool_search", map[string]any{"query": "which jira user"})
	if got := mcptest.Text(res); !strings.Contains(got, "known once someone signs in") || !strings.Contains(got, bobLink) {
		t.Errorf("bob's search, before anyone signed in, does not say how to sign in to jira:\n%s", got)
	}

	// Phishing: bob sends ann his link; ann opening it signs nobody in, and spends it.
	if code, page := browse(t, bobLink, "ann"); code != http.StatusForbidden || !strings.Contains(page, "another person") {
		t.Errorf("ann opening bob's link: %d %s", code, page)
	}
	if code, _ := browse(t, bobLink, "bob"); code != http.StatusNotFound {
		t.Errorf("bob's link after ann opened it: %d, want 404 (spent)", code)
	}
	if text, isErr := bob.whoami(t); !isErr || strings.Contains(text, "sub-ann") {
		t.Fatalf("bob calls after ann opened his link: %s", text)
	} else {
		bobLink = link(text)
	}

	// Each signs in with their own link.
	if code, page := browse(t, annLink, "ann"); code != http.StatusOK || !strings.Contains(page, "Signed in to jira") {
		t.Fatalf("ann signing in: %d %s", code, page)
	}
	eventually(t, 5*time.Second, "ann's client told the sign-in is complete", func() bool {
		ann.mu.Lock()
		defer ann.mu.Unlock()
		return len(ann.completed) == 1 && len(ann.elicited) == 1 && ann.completed[0] == ann.elicited[0].ElicitationID
	})
	// jira's tools are known now (once the index has them: it is built in the background);
	// bob is told to sign in before calling them.
	var got string
	eventually(t, 5*time.Second, "bob's search finding jira__whoami", func() bool {
		got = mcptest.Text(mcptest.Call(t, bob.Client, "tool_search", map[string]any{"query": "which jira user"}))
		return strings.Contains(got, "jira__whoami")
	})
	if !strings.Contains(got, "Before calling its tools") || !strings.Contains(got, bobLink) {
		t.Errorf("bob's search does not say how to sign in to jira:\n%s", got)
	}
	if code, page := browse(t, bobLink, "bob"); code != http.StatusOK {
		t.Fatalf("bob signing in: %d %s", code, page)
	}

	// 1,000 interleaved calls: each carries its caller's own token.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wrong := map[string]int{}
	for i := range 1000 {
		c, want := ann, "sub-ann"
		if i%2 == 1 {
			c, want = bob, "sub-bob"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "jira__whoami", Arguments: map[string]any{}}})
			got := "error"
			if err == nil {
				got = mcptest.Text(res)
			}
			if got != want {
				mu.Lock()
				wrong[want+" got "+got]++
				mu.Unlock()
			}
		}()
		if i%32 == 31 {
			wg.Wait() // within each session's limit of requests in flight
		}
	}
	wg.Wait()
	if len(wrong) > 0 {
		t.Errorf("calls that did not act as their caller: %v", wrong)
	}

	// ann revokes the app: her token is refused and her refresh token too. She alone is
	// asked to sign in again.
	jira.revoke("ann")
	d.revoke("ann")
	if text, isErr := ann.whoami(t); !isErr || link(text) == "" {
		t.Errorf("ann after revoking: %s", text)
	}
	if text, isErr := bob.whoami(t); isErr || text != "sub-bob" {
		t.Errorf("bob after ann revoked: %s", text)
	}

	jira.mu.Lock()
	auds := jira.auds
	jira.mu.Unlock()
	if auds[tm.url+"/mcp"] > 0 {
		t.Errorf("jira was sent toolsift's own access token (token passthrough): %v", auds)
	}
	logs := tm.logs()
	data, _ := os.ReadFile(auditFile)
	for _, secret := range append(d.issuedTokens(), annTok, bobTok) {
		if strings.Contains(logs, secret) || strings.Contains(string(data), secret) {
			t.Fatalf("a token is in the log or the audit log")
		}
	}
	if n := strings.Count(string(data), `"outcome":"sign_in"`); n != 4 {
		t.Errorf("%d audit lines of calls that needed a sign-in, want 4", n)
	}
	if n := strings.Count(string(data), `"outcome":"ok"`); n != 1001 {
		t.Errorf("%d audit lines of calls that went through, want 1001", n)
	}

	// status tells which servers each person signs in to, and which act for everyone.
	cmd := exec.Command(bin, "status", "--config", tm.cfg)
	cmd.Env = tm.env
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "per user, each person signs in for themselves: jira") || !strings.Contains(string(out), "shared, one credential acts for everyone (headers, env, or a local process): github") {
		t.Errorf("status:\n%s", out)
	}
}

// TestSignInWhenOnlyCallsAsk (issue 34): a server that lets toolsift connect and list its
// tools without a token, and asks for a sign-in only on a call, is still signed in to by
// each person: the call answers with a sign-in link, and once signed in the person's calls
// carry their own token.
func TestSignInWhenOnlyCallsAsk(t *testing.T) {
	d := newIDP(t)
	jira := newJiraDouble(t, d, true)
	tm := serveTeam(t, d, "", fmt.Sprintf("\n  jira:\n    url: %s/mcp\n", jira.srv.URL))
	ann := connectTeam(t, tm, d.token("ann", tm.url+"/mcp"), false)
	var text string
	var isErr bool
	eventually(t, 10*time.Second, "jira's tools listed without a token", func() bool {
		text, isErr = ann.whoami(t)
		return !strings.Contains(text, "unknown tool")
	})
	link := linkPattern(tm.url)(text)
	if !isErr || link == "" {
		t.Fatalf("ann's first call: %s", text)
	}
	if code, page := browse(t, link, "ann"); code != http.StatusOK {
		t.Fatalf("ann signing in: %d %s", code, page)
	}
	if text, isErr := ann.whoami(t); isErr || text != "sub-ann" {
		t.Errorf("ann's call after signing in: %s", text)
	}
}
