package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// accessServers are github, open to the eng group, one of whose tools is always loaded, and
// slack, open to all but for its post_message (bob alone) and get_users (the ci token).
func accessServers(t *testing.T) string {
	return githubFixture(t, `    alwaysLoad: [get_issue]
    access: { groups: [eng] }
`) + fmt.Sprintf(`
  slack:
    command: %q
    args: ["--catalog", %q]
    tools:
      slack_post_message: { access: { users: [bob@example.com] } }
      slack_get_users: { access: { tokens: [ci] } }
`, fixtureBin, catalog(t, "slack"))
}

// TestAccessRules (issue 34): access by user, by group and by named token. What a caller may
// not use does not exist for them: not in tools/list, not in tool_search's results or
// description, and a call of it by name fails as an unknown tool, without a word of the
// server or of a rule.
func TestAccessRules(t *testing.T) {
	d := newIDP(t)
	d.groups["ann"] = []string{"eng"}
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	tm := serveTeam(t, d, fmt.Sprintf("maxUnlocked: 60\naudit: {file: %q, arguments: true}", auditFile), accessServers(t))
	cmd := exec.Command(bin, "token", "create", "ci")
	cmd.Env = tm.env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	ciToken := strings.TrimSpace(string(out))
	as := func(tok string) *httpSession {
		return connectHTTP(t, tm.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tok}))
	}
	annTok, bobTok := d.token("ann", tm.url+"/mcp"), d.token("bob", tm.url+"/mcp")
	ann, bob, ci := as(annTok), as(bobTok), as(ciToken)

	searchText := func(s *httpSession, q string) string {
		res := s.call(t, "tool_search", map[string]any{"query": q, "max_results": 10})
		return res.Content[0].(mcp.TextContent).Text
	}
	description := func(s *httpSession) string {
		res, err := s.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name == "tool_search" {
				return tl.Description
			}
		}
		t.Fatal("no tool_search listed")
		return ""
	}
	tests := []struct {
		who     string
		s       *httpSession
		sees    []string // found by their own search, callable
		notSees []string // nowhere
	}{
		{"ann (eng)", ann, []string{"github__create_issue", "slack__slack_list_channels"}, []string{"slack__slack_post_message", "slack__slack_get_users"}},
		{"bob (no group)", bob, []string{"slack__slack_post_message", "slack__slack_list_channels"}, []string{"github__create_issue", "github__get_issue", "slack__slack_get_users"}},
		{"the ci token", ci, []string{"slack__slack_get_users", "slack__slack_list_channels"}, []string{"github__create_issue", "slack__slack_post_message"}},
	}
	for _, tt := range tests {
		t.Run(tt.who, func(t *testing.T) {
			for _, name := range tt.sees {
				words := strings.ReplaceAll(strings.SplitN(name, "__", 2)[1], "_", " ")
				if got := searchText(tt.s, words); !strings.Contains(got, `"`+name+`"`) {
					t.Errorf("search %q does not find %s:\n%s", words, name, got)
				}
			}
			listed := tt.s.names(t)
			if slices.Contains(listed, "github__get_issue") != slices.Contains(tt.sees, "github__create_issue") {
				t.Errorf("always-loaded github__get_issue listed=%v; the list: %v", slices.Contains(listed, "github__get_issue"), listed)
			}
			for _, name := range tt.notSees {
				words := strings.ReplaceAll(strings.SplitN(name, "__", 2)[1], "_", " ")
				if got := searchText(tt.s, words); strings.Contains(got, name) {
					t.Errorf("search %q finds %s, which %s may not use:\n%s", words, name, tt.who, got)
				}
				if got := searchText(tt.s, "select:"+name); strings.Contains(got, `"name":"`+name) {
					t.Errorf("select:%s finds it:\n%s", name, got)
				}
				if slices.Contains(tt.s.names(t), name) {
					t.Errorf("%s is listed", name)
				}
				res, err := tt.s.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": map[string]any{}}}})
				if err != nil {
					t.Fatal(err)
				}
				text := res.Content[0].(mcp.TextContent).Text
				if !res.IsError || !strings.Contains(text, "unknown tool") || strings.Contains(text, "server") || strings.Contains(text, "denied") || strings.Contains(text, "access") {
					t.Errorf("calling %s: %s", name, text)
				}
			}
			desc := description(tt.s)
			if strings.Contains(desc, "github") != slices.Contains(tt.sees, "github__create_issue") {
				t.Errorf("tool_search's description and github:\n%s", desc)
			}
			if got := searchText(tt.s, "group:github"); strings.Contains(got, "github__") != slices.Contains(tt.sees, "github__create_issue") {
				t.Errorf("group:github:\n%s", got)
			}
		})
	}
	res := bob.call(t, "tool_search", map[string]any{"query": "group:github"})
	if text := res.Content[0].(mcp.TextContent).Text; !res.IsError || strings.Contains(strings.SplitN(text, "known:", 2)[1], "github") {
		t.Errorf("group:github for bob: %s", text)
	}

	// The audit log has a line for every call, with who made it and how it ended, and
	// arguments masked; no token is in it or in the log.
	secret := "ghp_" + strings.Repeat("x1", 18)
	ann.call(t, "github__create_issue", map[string]any{"owner": "o", "repo": "r", "title": "t", "body": "my token " + secret})
	var lines []map[string]any
	eventually(t, 5*time.Second, "the audit line of ann's call", func() bool {
		data, _ := os.ReadFile(auditFile)
		lines = nil
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil {
				t.Fatalf("an audit line is not JSON: %q", l)
			}
			lines = append(lines, m)
		}
		return len(lines) > 0 && lines[len(lines)-1]["tool"] == "github__create_issue"
	})
	if want := 2 + 3 + 2 + 1; len(lines) != want {
		t.Errorf("%d audit lines, want %d (one per call)", len(lines), want)
	}
	last := lines[len(lines)-1]
	if last["user"] != "ann@example.com" || last["auth"] != "person" || last["server"] != "github" || last["outcome"] != "ok" ||
		last["client"] != "e2e" || last["session"] == "" || last["argument_bytes"].(float64) < 40 {
		t.Errorf("the audit line of ann's call: %v", last)
	}
	if args, _ := json.Marshal(last["arguments"]); !strings.Contains(string(args), `"title":"t"`) || strings.Contains(string(args), secret) {
		t.Errorf("audited arguments: %s", args)
	}
	byWho := map[string]int{}
	for _, l := range lines[:len(lines)-1] {
		if l["outcome"] != "unknown" || l["server"] != nil {
			t.Errorf("a call of a tool the caller may not use: %v", l)
		}
		byWho[fmt.Sprint(l["user"], "/", l["auth"])]++
	}
	if want := map[string]int{"ann@example.com/person": 2, "bob@example.com/person": 3, "ci/token": 2}; !maps.Equal(byWho, want) {
		t.Errorf("audit lines by caller: %v, want %v", byWho, want)
	}
	data, _ := os.ReadFile(auditFile)
	for _, tok := range []string{annTok, bobTok, ciToken, secret} {
		if strings.Contains(string(data), tok) || strings.Contains(tm.logs(), tok) {
			t.Errorf("a token (%.12s…) is in the audit log or the log", tok)
		}
	}
}

// TestAccessCoversPromptsAndResources (issue 34): a server's access covers its prompts,
// resources and resource templates: a caller it does not admit lists none of them and
// cannot get or read them.
func TestAccessCoversPromptsAndResources(t *testing.T) {
	d := newIDP(t)
	d.groups["ann"] = []string{"eng"}
	tm := serveTeam(t, d, "", fmt.Sprintf(`
  conf:
    command: %q
    args: ["--builtins=false", "--conformance"]
    access: { groups: [eng] }
`, fixtureBin))
	ann := connectHTTP(t, tm.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + d.token("ann", tm.url+"/mcp")}))
	bob := connectHTTP(t, tm.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + d.token("bob", tm.url+"/mcp")}))
	ctx := context.Background()
	lists := func(c *httpSession) (prompts []mcp.Prompt, resources []mcp.Resource, templates []mcp.ResourceTemplate) {
		if res, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{}); err == nil {
			prompts = res.Prompts
		}
		if res, err := c.ListResources(ctx, mcp.ListResourcesRequest{}); err == nil {
			resources = res.Resources
		}
		if res, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{}); err == nil {
			templates = res.ResourceTemplates
		}
		return
	}
	var ap []mcp.Prompt
	var ar []mcp.Resource
	var at []mcp.ResourceTemplate
	eventually(t, 10*time.Second, "ann listing conf's prompts, resources and templates", func() bool {
		ap, ar, at = lists(ann)
		return len(ap) > 0 && len(ar) > 0 && len(at) > 0
	})
	bp, br, bt := lists(bob)
	if len(bp)+len(br)+len(bt) > 0 {
		t.Errorf("bob lists %d prompts, %d resources, %d templates of a server he may not use", len(bp), len(br), len(bt))
	}
	get := mcp.GetPromptRequest{}
	get.Params.Name = "conf__test_simple_prompt" // one that asks nothing of the client
	if !slices.ContainsFunc(ap, func(p mcp.Prompt) bool { return p.Name == get.Params.Name }) {
		t.Fatalf("ann does not list %s: %v", get.Params.Name, ap)
	}
	if _, err := bob.GetPrompt(ctx, get); err == nil {
		t.Errorf("bob got prompt %s", get.Params.Name)
	}
	if _, err := ann.GetPrompt(ctx, get); err != nil {
		t.Errorf("ann could not get prompt %s: %v", get.Params.Name, err)
	}
	read := mcp.ReadResourceRequest{}
	read.Params.URI = ar[0].URI
	if _, err := bob.ReadResource(ctx, read); err == nil {
		t.Errorf("bob read resource %s", ar[0].URI)
	}
	if _, err := ann.ReadResource(ctx, read); err != nil {
		t.Errorf("ann could not read resource %s: %v", ar[0].URI, err)
	}
}
