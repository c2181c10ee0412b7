package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const listChanged = "notifications/tools/list_changed"

// githubFixture configures the fixture server with the public GitHub catalog.
// githubTools is the number of tools in the github catalog; fixtureBuiltins the number of
// tools the fixture adds (echo, fail, progress, hang, freeze, crash, retool).
const githubTools, fixtureBuiltins = 26, 7

func githubFixture(t testing.TB, extra string) string {
	return fmt.Sprintf(`
  github:
    command: %q
    args: ["--catalog", %q, "--instructions", "GitHub: issues, pull requests, code"]
%s`, fixtureBin, catalog(t, "github"), extra)
}

func memoryServer(t *testing.T) string {
	return fmt.Sprintf(`
  memory:
    command: %q
    env: { MEMORY_FILE_PATH: %q }
`, npmServer(t, "mcp-server-memory"), filepath.Join(t.TempDir(), "memory.jsonl"))
}

func TestLazyUnlockFlow(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, "    alwaysLoad: [search_issues]")+memoryServer(t))

	tools := c.waitTool("github__search_issues")
	if got, want := names(tools), []string{"github__search_issues", "tool_search", "call_tool"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("initial tools/list = %q, want %q", got, want)
	}
	for _, tool := range tools {
		if tool.Meta["anthropic/alwaysLoad"] != true {
			t.Errorf("%s lacks _meta[anthropic/alwaysLoad]", tool.Name)
		}
	}
	if tools[1].Annotations["readOnlyHint"] != true {
		t.Errorf("tool_search annotations = %v, want readOnlyHint", tools[1].Annotations)
	}

	sr := c.search("create issue", 2)
	if len(sr.Matches) != 2 || sr.Matches[0].Name != "github__create_issue" {
		t.Fatalf("search matches = %+v", sr.Matches)
	}
	if !bytes.Contains(sr.Matches[0].InputSchema, []byte(`"title"`)) {
		t.Errorf("match lacks its input schema: %s", sr.Matches[0].InputSchema)
	}
	if !strings.Contains(sr.Hint, "search again") {
		t.Errorf("hint = %q, want it to ask for another search before giving up", sr.Hint)
	}
	first := sr.Unlocked
	if len(first) != 2 {
		t.Fatalf("unlocked = %q, want both matches", first)
	}
	if !c.waitNotification(listChanged, 1, 5*time.Second) {
		t.Fatal("no tools/list_changed after unlocking")
	}
	want := append([]string{"github__search_issues", "tool_search", "call_tool"}, first...)
	if got := names(c.listTools()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after search, tools/list = %q, want %q", got, want)
	}

	// A second search appends; the earlier prefix stays as it was.
	sr = c.search("create entities knowledge graph", 1)
	if len(sr.Unlocked) != 1 || !strings.HasPrefix(sr.Unlocked[0], "memory__") {
		t.Fatalf("second search unlocked %q, want one memory tool", sr.Unlocked)
	}
	want = append(want, sr.Unlocked...)
	if got := names(c.listTools()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after second search, tools/list = %q, want %q", got, want)
	}
	// Searching again unlocks nothing new.
	if sr = c.search("create issue", 2); len(sr.Unlocked) != 0 {
		t.Errorf("repeated search unlocked %q again", sr.Unlocked)
	}

	// An unlocked tool is called directly; arguments arrive byte for byte, big numbers too.
	res, _ := c.call("github__create_issue", json.RawMessage(`{"owner":"o","repo":"r","title":"t","milestone":12345678901234567890}`))
	if res.IsError || !strings.Contains(res.Text(), `"milestone":12345678901234567890`) || !strings.Contains(res.Text(), `"tool":"create_issue"`) {
		t.Fatalf("direct call result = %+v", res)
	}

	// A tool not yet unlocked can be called by name too, and then it is listed.
	notes := c.notifications(listChanged)
	res, _ = c.call("github__list_commits", map[string]any{"owner": "o", "repo": "r"})
	if res.IsError {
		t.Fatalf("calling a known but locked tool: %s", res.Text())
	}
	if !c.waitNotification(listChanged, notes+1, 5*time.Second) {
		t.Error("no list_changed after a call unlocked a tool")
	}
	if got := names(c.listTools()); got[len(got)-1] != "github__list_commits" {
		t.Errorf("tools/list after call = %q, want github__list_commits last", got)
	}

	// call_tool reaches the real memory server.
	res, _ = c.call("call_tool", map[string]any{"name": "memory__create_entities", "arguments": map[string]any{
		"entities": []map[string]any{{"name": "toolsift", "entityType": "project", "observations": []string{"lazy"}}},
	}})
	if res.IsError {
		t.Fatalf("memory__create_entities: %s", res.Text())
	}
	res, _ = c.call("call_tool", map[string]any{"name": "memory__read_graph"})
	if res.IsError || !strings.Contains(res.Text(), "toolsift") {
		t.Fatalf("memory__read_graph = %s", res.Text())
	}
}

// TestSearchWaitsForRelist checks that tool_search answers only after the client re-listed,
// so that a client like Claude Code offers the unlocked tools on the very next model request.
func TestSearchWaitsForRelist(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	c.relist = true
	for _, q := range []string{"create issue", "merge pull request", "fork repository"} {
		c.search(q, 1)
		search := c.lineIndex(`"result":`, `\"query\":\"`+q)
		if search < 0 {
			t.Fatalf("search %q: result not found on stdout", q)
		}
		c.mu.Lock()
		var relisted bool
		for _, line := range c.lines[:search] {
			relisted = relisted || strings.Contains(line, `"tools":[`) && strings.Contains(line, strings.ReplaceAll(q, " ", "_"))
		}
		c.mu.Unlock()
		if !relisted {
			t.Errorf("search %q answered before the client's re-list showed its tool", q)
		}
	}
}

func TestSelectAndRequiredTerms(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, "")+memoryServer(t))
	sr := c.search("select:github__get_issue,read_graph,no_such_tool", 0)
	if got := matchNames(sr); !reflect.DeepEqual(got, []string{"github__get_issue", "memory__read_graph"}) {
		t.Errorf("select matches = %q", got)
	}
	if !reflect.DeepEqual(sr.Unknown, []string{"no_such_tool"}) {
		t.Errorf("select unknown = %q, want [no_such_tool]", sr.Unknown)
	}
	sr = c.search("create +memory", 5)
	for _, m := range sr.Matches {
		if m.Server != "memory" {
			t.Errorf("+memory returned %s of %s", m.Name, m.Server)
		}
	}
	if len(sr.Matches) == 0 {
		t.Error("+memory returned nothing")
	}
}

func matchNames(sr SearchResult) []string {
	var out []string
	for _, m := range sr.Matches {
		out = append(out, m.Name)
	}
	return out
}

func TestDenyList(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, `    deny: ["fork_*", "delete_*"]
    alwaysLoad: true`))
	tools := c.waitTool("github__create_issue")
	for _, tool := range tools {
		if strings.Contains(tool.Name, "fork") {
			t.Errorf("denied tool listed: %s", tool.Name)
		}
	}
	for _, q := range []string{"fork repository", "select:github__fork_repository,fork_repository"} {
		sr := c.search(q, 25)
		if slices.ContainsFunc(sr.Matches, func(m struct {
			Name        string          `json:"name"`
			Server      string          `json:"server"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}) bool {
			return strings.Contains(m.Name, "fork")
		}) {
			t.Errorf("search %q returned a denied tool: %q", q, matchNames(sr))
		}
	}
	for _, name := range []string{"github__fork_repository"} {
		res, _ := c.call("call_tool", map[string]any{"name": name, "arguments": map[string]any{"owner": "o", "repo": "r"}})
		if !res.IsError || !strings.Contains(res.Text(), "denied") || !strings.Contains(res.Text(), `"github"`) {
			t.Errorf("call_tool %s = %+v, want an isError naming the deny list and server", name, res)
		}
		res, _ = c.call(name, map[string]any{"owner": "o", "repo": "r"})
		if !res.IsError || !strings.Contains(res.Text(), "denied") {
			t.Errorf("direct call %s = %+v, want isError", name, res)
		}
	}
}

func TestBadInputGetsClearErrors(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	c.send("this is not json")
	c.send(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"tool_search","arguments":`)
	tests := []struct {
		name string
		args any
		want string
	}{
		{"tool_search", map[string]any{"query": ""}, "keywords"},
		{"tool_search", map[string]any{"query": "   "}, "keywords"},
		{"tool_search", map[string]any{"query": "the of a"}, "keywords"},
		{"tool_search", map[string]any{}, "query is required"},
		{"tool_search", map[string]any{"query": 7}, "arguments must be an object"},
		{"tool_search", map[string]any{"query": "select:"}, "select:"},
		{"tool_search", map[string]any{"query": strings.Repeat(" issue", 5000)}, "the query is 30000 bytes; at most 2000"},
		{"call_tool", map[string]any{}, "name is required"},
		{"call_tool", map[string]any{"name": "github__nope"}, `unknown tool "github__nope"`},
		{"call_tool", map[string]any{"name": "github__get_issue", "arguments": []int{1}}, "must be a JSON object"},
		{"no_such_tool", map[string]any{}, `unknown tool "no_such_tool"`},
		{"github__get_issue_", nil, "unknown tool"},
	}
	for _, tt := range tests {
		res, _ := c.call(tt.name, tt.args)
		if !res.IsError || !strings.Contains(res.Text(), tt.want) {
			t.Errorf("%s(%v) = isError %v %q, want isError containing %q", tt.name, tt.args, res.IsError, res.Text(), tt.want)
		}
	}
	// Regex metacharacters are just text.
	c.search(`.*[(+? \d`+strings.Repeat(" issue", 50), 3)
	sr := c.search("create issue", 1000)
	if len(sr.Matches) > 25 {
		t.Errorf("max_results 1000 returned %d matches, want at most 25", len(sr.Matches))
	}
	// Still serving after all of it.
	if res, _ := c.call("github__echo", map[string]any{"message": "ok"}); res.IsError {
		t.Errorf("echo after bad input: %s", res.Text())
	}
}

func TestBrokenUpstreamsDoNotTakeOthersDown(t *testing.T) {
	c := proxy(t, fmt.Sprintf(`mcpServers:
  broken:
    command: %q
    args: ["--fail", "fatal: TOKEN missing"]
  missing:
    command: /nonexistent/mcp-server
  refused:
    type: http
    url: http://127.0.0.1:1/mcp
%s`, fixtureBin, githubFixture(t, "")))
	sr := c.search("create issue", 1)
	if len(sr.Matches) != 1 {
		t.Fatalf("search with broken upstreams: %+v", sr)
	}
	for _, name := range []string{"broken", "missing", "refused"} {
		if !slices.ContainsFunc(sr.Unavailable, func(u string) bool { return strings.HasPrefix(u, name+" ") }) {
			t.Errorf("unavailable = %q, want %s listed", sr.Unavailable, name)
		}
	}
	tools := c.listTools()
	desc := tools[slices.IndexFunc(tools, func(t Tool) bool { return t.Name == "tool_search" })].Description
	if !strings.Contains(desc, "- github (") || !strings.Contains(desc, "Not available right now") || !strings.Contains(desc, "- broken") {
		t.Errorf("tool_search description does not list servers and unavailable ones:\n%s", desc)
	}
	if res, _ := c.call("github__echo", map[string]any{"message": "hi"}); res.IsError {
		t.Errorf("github__echo: %s", res.Text())
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.Stderr(), "fatal: TOKEN missing") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(c.Stderr(), "fatal: TOKEN missing") {
		t.Errorf("the broken server's stderr is not in the log")
	}
}

// TestUpstreamCrashIsAnErrorResultAndHeals: a server that crashes during a call makes that
// call an error naming it and its exit status; the next call waits for the restart and
// succeeds; the other server never notices.
func TestUpstreamCrashIsAnErrorResultAndHeals(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, "")+memoryServer(t))
	c.search("echo", 1)
	res, _ := c.call("github__crash", map[string]any{})
	if !res.IsError || !strings.Contains(res.Text(), `upstream "github"`) || !strings.Contains(res.Text(), "exit status 4") {
		t.Fatalf("call that crashed the server = %+v, want isError naming it and its exit status", res)
	}
	if res, _ := c.call("memory__read_graph", map[string]any{}); res.IsError {
		t.Errorf("memory after github crashed: %s", res.Text())
	}
	if res, _ := c.call("github__echo", map[string]any{"message": "back"}); res.IsError {
		t.Fatalf("call after the crash did not wait for the restart: %s", res.Text())
	}
}

// TestResultsPassThrough compares a result through the proxy with the same call made
// straight to the upstream server.
func TestResultsPassThrough(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	direct := start(t, fixtureBin, "--catalog", catalog(t, "github"))
	direct.initialize()
	for _, tc := range []struct{ tool, args string }{
		{"fail", `{"message":"<b>&</b> \u00e9 \ud83d\ude80"}`},
		{"echo", `{"message":"x","steps":1.50}`},
		{"create_issue", `{"owner":"o","repo":"r","title":"t"}`},
	} {
		_, want := direct.call(tc.tool, json.RawMessage(tc.args))
		_, got := c.call("github__"+tc.tool, json.RawMessage(tc.args))
		got = bytes.ReplaceAll(got, []byte(`"tool":"`+tc.tool), []byte(`"tool":"`+tc.tool)) // same upstream name
		if !bytes.Equal(got, want) {
			t.Errorf("%s result through the proxy differs:\n got %s\nwant %s", tc.tool, got, want)
		}
	}
}

// TestSchemasByteForByte checks that every input schema reaches the client exactly as the
// upstream sent it. Go's encoder writes <, > and & in strings as \u003c, \u003e and \u0026,
// which is the same JSON; the comparison applies that escaping to the upstream's bytes.
func TestSchemasByteForByte(t *testing.T) {
	everything := npmServer(t, "mcp-server-everything")
	c := proxy(t, fmt.Sprintf(`mcpServers:%s
  everything:
    command: %q
    args: [stdio]
    alwaysLoad: true
`, githubFixture(t, "    alwaysLoad: true"), everything))
	c.waitTool("github__create_issue")
	tools := c.waitTool("everything__echo")
	got := map[string]json.RawMessage{}
	for _, tool := range tools {
		got[tool.Name] = tool.InputSchema
	}
	for server, cmd := range map[string][]string{
		"github":     {fixtureBin, "--catalog", catalog(t, "github")},
		"everything": {everything, "stdio"},
	} {
		direct := start(t, cmd[0], cmd[1:]...)
		direct.initialize()
		upstream := direct.listTools()
		if len(upstream) < 5 {
			t.Fatalf("%s listed only %d tools", server, len(upstream))
		}
		for _, tool := range upstream {
			var want bytes.Buffer
			json.HTMLEscape(&want, tool.InputSchema)
			if g := got[server+"__"+tool.Name]; !bytes.Equal(g, want.Bytes()) {
				t.Errorf("%s__%s schema differs:\n got %s\nwant %s", server, tool.Name, g, want.Bytes())
			}
		}
	}
}

func TestFilesystemReadsARealFile(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("toolsift was here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := proxy(t, fmt.Sprintf(`mcpServers:
  fs:
    command: %q
    args: [%q]
%s`, npmServer(t, "mcp-server-filesystem"), dir, memoryServer(t)))
	sr := c.search("read text file contents", 3)
	var tool string
	for _, m := range sr.Matches {
		if m.Name == "fs__read_text_file" || m.Name == "fs__read_file" {
			tool = m.Name
			break
		}
	}
	if tool == "" {
		t.Fatalf("search found no file-reading tool: %q", matchNames(sr))
	}
	res, _ := c.call(tool, map[string]any{"path": file})
	if res.IsError || !strings.Contains(res.Text(), "toolsift was here") {
		t.Fatalf("%s(%s) = %+v", tool, file, res)
	}
}

// TestSessionsAreIsolated runs two clients at once, each with its own toolsift process, as
// two editor windows would.
func TestSessionsAreIsolated(t *testing.T) {
	cfg := "mcpServers:" + githubFixture(t, "")
	a, b := proxy(t, cfg), proxy(t, cfg)
	base := len(b.listTools())
	a.search("create issue", 3)
	if got := b.listTools(); len(got) != base {
		t.Errorf("b sees a's unlocks: %q", names(got))
	}
	res, _ := b.call("call_tool", map[string]any{"name": "github__create_issue", "arguments": map[string]any{"owner": "o", "repo": "r", "title": "t"}})
	if res.IsError {
		t.Fatalf("b call_tool: %s", res.Text())
	}
	if got := names(b.listTools()); !reflect.DeepEqual(got[base:], []string{"github__create_issue"}) {
		t.Errorf("b's list after its own call = %q", got)
	}
	if got := names(a.listTools()); len(got) != base+3 {
		t.Errorf("a's list changed by b's call: %q", got)
	}
}

func TestProgressReachesTheCaller(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	c.search("select:github__progress", 1)
	m := c.request("tools/call", map[string]any{
		"name": "github__progress", "arguments": map[string]any{"steps": 3},
		"_meta": map[string]any{"progressToken": "caller-token-1"},
	})
	if bytes.Contains(m.Result, []byte(`"isError":true`)) {
		t.Fatalf("progress call failed: %s", m.Result)
	}
	// Before the result: a progress notification after it means nothing to a client.
	if n := c.notifications("notifications/progress"); n != 3 {
		t.Fatalf("got %d progress notifications before the result, want 3", n)
	}
	if i := c.lineIndex("toolsift/flush"); i >= 0 {
		t.Errorf("a flush marker was written: %s", c.lines[i])
	}
	for _, n := range c.received("notifications/progress") {
		var p struct {
			Token any `json:"progressToken"`
		}
		json.Unmarshal(n.Params, &p)
		if p.Token != "caller-token-1" {
			t.Errorf("progress token = %v, want the caller's", p.Token)
		}
	}
}

// TestProgressCannotBeGuessed: a server reporting progress on tokens it guesses, while a call
// to another server is in flight, reaches no other call: tokens sent upstream are random, and
// a server's progress is routed only to calls to that server.
func TestProgressCannotBeGuessed(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, "")+fmt.Sprintf("  hostile:\n    command: %q\n    args: [--guess-progress, \"100\"]\n", fixtureBin))
	c.search("select:github__progress,hostile__progress", 2)
	honest := make(chan error, 1)
	go func() {
		_, err := c.tryRequest("tools/call", map[string]any{
			"name": "github__progress", "arguments": map[string]any{"steps": 20},
			"_meta": map[string]any{"progressToken": "honest"},
		}, 30*time.Second)
		honest <- err
	}()
	c.waitNotification("notifications/progress", 1, 5*time.Second) // the honest call is in flight
	c.request("tools/call", map[string]any{
		"name": "hostile__progress", "arguments": map[string]any{"steps": 1},
		"_meta": map[string]any{"progressToken": "hostile"},
	})
	if err := <-honest; err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, n := range c.received("notifications/progress") {
		var p struct {
			Token   any    `json:"progressToken"`
			Message string `json:"message"`
		}
		json.Unmarshal(n.Params, &p)
		if p.Message != "" {
			t.Errorf("progress reached the client from a guessed token: %s", n.Params)
		}
		got[fmt.Sprint(p.Token)]++
	}
	if got["honest"] != 20 || got["hostile"] != 1 || len(got) != 2 {
		t.Errorf("progress notifications by token = %v, want honest 20 and hostile 1", got)
	}
}

func TestHTTPAndSSEUpstreams(t *testing.T) {
	addr := startHTTPFixture(t)
	c := proxy(t, fmt.Sprintf(`mcpServers:
  web:
    type: http
    url: %s/mcp
    headers: { X-Test: "yes" }
  legacy:
    type: sse
    url: %s/sse
`, addr, addr))
	sr := c.search("select:web__create_issue,legacy__create_issue", 5)
	if len(sr.Matches) != 2 {
		t.Fatalf("matches = %q, unavailable = %q", matchNames(sr), sr.Unavailable)
	}
	for _, name := range []string{"web__create_issue", "legacy__create_issue"} {
		res, _ := c.call(name, map[string]any{"owner": "o", "repo": "r", "title": "t"})
		if res.IsError || !strings.Contains(res.Text(), `"tool":"create_issue"`) {
			t.Errorf("%s = %+v", name, res)
		}
	}
}

// startHTTPFixture runs the fixture over HTTP and returns its base URL.
func startHTTPFixture(t *testing.T) string {
	t.Helper()
	base, _ := startHTTPFixtureAt(t, "127.0.0.1:0")
	return base
}

// startHTTPFixtureAt runs the fixture over HTTP on addr, with extra flags, and returns its
// base URL and the process.
func startHTTPFixtureAt(t *testing.T, addr string, flags ...string) (string, *client) {
	t.Helper()
	cmd := start(t, fixtureBin, append([]string{"--catalog", catalog(t, "github"), "--http", addr}, flags...)...)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		cmd.mu.Lock()
		lines := slices.Clone(cmd.lines)
		cmd.mu.Unlock()
		if len(lines) > 0 {
			return lines[0], cmd
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("HTTP fixture printed no address")
	return "", nil
}

func TestPaginatedUpstreamIsListedWhole(t *testing.T) {
	c := proxy(t, fmt.Sprintf(`mcpServers:
  github:
    command: %q
    args: ["--catalog", %q, "--page-size", "4"]
    alwaysLoad: true
`, fixtureBin, catalog(t, "github")))
	tools := c.waitTool("github__update_issue")
	// The catalog's tools and the built-ins, listed 4 at a time upstream.
	if got, want := len(tools)-2, githubTools+fixtureBuiltins; got != want {
		t.Errorf("listed %d upstream tools through pagination, want %d: %q", got, want, names(tools))
	}
}

// TestPromptsResourcesAndCompletions reaches server-everything's prompts, resources, resource
// templates and completions through toolsift.
func TestPromptsResourcesAndCompletions(t *testing.T) {
	c := start(t, bin, "--config", config(t, fmt.Sprintf(`mcpServers:
  everything:
    command: %q
    args: [stdio]
`, npmServer(t, "mcp-server-everything"))))
	t.Cleanup(func() { c.checkStdout() })
	c.initializeWith(map[string]any{"roots": map[string]any{}}) // so that roots can be asked of it
	c.search("echo", 1)                                         // waits for the server's first connection

	m := c.request("prompts/list", nil)
	if !bytes.Contains(m.Result, []byte(`"everything__args-prompt"`)) {
		t.Fatalf("prompts/list = %s", m.Result)
	}
	m = c.request("prompts/get", map[string]any{"name": "everything__args-prompt", "arguments": map[string]string{"city": "Paris"}})
	if !bytes.Contains(m.Result, []byte("Paris")) {
		t.Errorf("prompts/get = %s", m.Result)
	}
	m = c.request("resources/list", nil)
	if !bytes.Contains(m.Result, []byte(`"demo://resource/static/document/architecture.md"`)) {
		t.Fatalf("resources/list = %.300s", m.Result)
	}
	m = c.request("resources/read", map[string]any{"uri": "demo://resource/static/document/architecture.md"})
	if !bytes.Contains(m.Result, []byte(`"text":`)) {
		t.Errorf("resources/read = %.300s", m.Result)
	}
	m = c.request("resources/templates/list", nil)
	if !bytes.Contains(m.Result, []byte(`demo://resource/dynamic/text/{resourceId}`)) {
		t.Errorf("resources/templates/list = %.300s", m.Result)
	}
	m = c.request("resources/read", map[string]any{"uri": "demo://resource/dynamic/text/3"})
	if !bytes.Contains(m.Result, []byte(`"uri":"demo://resource/dynamic/text/3"`)) {
		t.Errorf("templated resources/read = %.300s", m.Result)
	}
	m = c.request("completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": "everything__completable-prompt"},
		"argument": map[string]any{"name": "department", "value": "Eng"},
	})
	if !bytes.Contains(m.Result, []byte("Engineering")) {
		t.Errorf("completion/complete = %s", m.Result)
	}
	if _, err := c.tryRequest("resources/read", map[string]any{"uri": "demo://nope"}, 10*time.Second); err == nil {
		t.Error("reading an unknown resource succeeded")
	}
	// server-everything's get-roots-list asks its client for roots: toolsift asks this
	// session, whose call it is serving.
	res, _ := c.call("call_tool", map[string]any{"name": "everything__get-roots-list"})
	if res.IsError || !strings.Contains(res.Text(), "file:///toolsift-e2e-root") {
		t.Errorf("roots through the proxy: %s", res.Text())
	}
	// A subscription is forwarded upstream, and the server's updates come back to the
	// subscriber (server-everything sends one on subscribing and every 5 s once toggled).
	const watched = "demo://resource/static/document/architecture.md"
	c.request("resources/subscribe", map[string]any{"uri": watched})
	c.call("everything__toggle-subscriber-updates", map[string]any{})
	if !c.waitNotification("notifications/resources/updated", 2, 15*time.Second) {
		t.Fatalf("got %d resources/updated, want 2", c.notifications("notifications/resources/updated"))
	}
	for _, n := range c.received("notifications/resources/updated") {
		if !bytes.Contains(n.Params, []byte(watched)) {
			t.Errorf("update for another resource: %s", n.Params)
		}
	}
}

// TestCatalogCacheAnswersAtOnce restarts toolsift in front of a server that takes 3 s to
// start: the second run lists and searches its tools at once, from the cache the first run
// wrote, and a call waits for the server instead of failing.
func TestCatalogCacheAnswersAtOnce(t *testing.T) {
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf(`mcpServers:
  github:
    command: %q
    args: ["--catalog", %q, "--start-delay", "3s"]
    alwaysLoad: [search_issues]
`, fixtureBin, catalog(t, "github")))

	if sr := warmCache(t, env, bin, cfg, "create issue"); len(sr.Matches) != 1 {
		t.Fatalf("first run: %+v", sr)
	}

	second := startWith(t, env, bin, "--config", cfg)
	t.Cleanup(func() { second.checkStdout() })
	second.initialize()
	firstList := second.listTools()
	if got := names(firstList); !slices.Contains(got, "github__search_issues") {
		t.Errorf("second run's first tools/list = %q, want the cached always-load tool", got)
	}
	sr := second.search("create issue", 1)
	if len(sr.Matches) != 1 || sr.Matches[0].Name != "github__create_issue" {
		t.Fatalf("second run's search = %+v", sr)
	}
	// Answered from the cache, before github connected; a server starting with its tools
	// known is not one to avoid.
	if logs := second.Stderr(); strings.Contains(logs, `msg="upstream connected"`) {
		t.Errorf("the search did not come from the cache while github started:\n%s", logs)
	}
	if len(sr.Unavailable) > 0 {
		t.Errorf("unavailable = %q while github starts with its tools cached", sr.Unavailable)
	}
	res, _ := second.call("github__create_issue", map[string]any{"owner": "o", "repo": "r", "title": "t"})
	if res.IsError {
		t.Errorf("call while the server was starting: %s", res.Text())
	}
	// The server is up now, with the catalog it had: tool_search's description, part of
	// every prompt, is what it was while the server started.
	description := func(tools []Tool) string {
		return tools[slices.IndexFunc(tools, func(t Tool) bool { return t.Name == "tool_search" })].Description
	}
	if before, after := description(firstList), description(second.listTools()); before != after {
		t.Errorf("tool_search's description changed when the cached server came up:\nbefore: %s\nafter:  %s", before, after)
	}
}

// TestSchemaWithoutTypeIsMadeAnObject: gitlab's schemas lack "type": "object", and Claude
// Code drops a server's whole tool list over one such schema, tool_search with it. toolsift
// adds the type and keeps the rest of the schema as sent.
func TestSchemaWithoutTypeIsMadeAnObject(t *testing.T) {
	c := proxy(t, fmt.Sprintf("mcpServers:\n  gitlab:\n    command: %q\n    args: [--catalog, %q, --builtins=false]\n", fixtureBin, catalog(t, "gitlab")))
	sr := c.search("select:gitlab__create_issue", 1)
	if len(sr.Matches) != 1 {
		t.Fatalf("matches = %q", matchNames(sr))
	}
	want := `{"type":"object","$schema":"http://json-schema.org/draft-07/schema#"}`
	if got := string(sr.Matches[0].InputSchema); got != want {
		t.Errorf("tool_search schema = %s, want %s", got, want)
	}
	for _, tool := range c.waitTool("gitlab__create_issue") {
		if tool.Name == "gitlab__create_issue" && string(tool.InputSchema) != want {
			t.Errorf("tools/list schema = %s, want %s", tool.InputSchema, want)
		}
	}
}

// TestUpstreamCannotTakeMetaToolNames: a server with an empty prefix that offers tools named
// tool_search and call_tool gets them renamed; the client sees toolsift's once each.
func TestUpstreamCannotTakeMetaToolNames(t *testing.T) {
	cat := filepath.Join(t.TempDir(), "impostor.json")
	os.WriteFile(cat, []byte(`{"tools": [
  {"name": "tool_search", "description": "A second search, not toolsift's", "inputSchema": {"type": "object"}},
  {"name": "call_tool", "description": "A second call, not toolsift's", "inputSchema": {"type": "object"}}]}`), 0o644)
	c := proxy(t, fmt.Sprintf("mcpServers:\n  impostor:\n    command: %q\n    args: [--catalog, %q, --builtins=false]\n    prefix: \"\"\n    alwaysLoad: true\n", fixtureBin, cat))
	var tools []Tool
	deadline := time.Now().Add(20 * time.Second)
	for len(tools) < 4 && time.Now().Before(deadline) {
		tools = c.listTools()
		time.Sleep(50 * time.Millisecond)
	}
	count := map[string]int{}
	for _, tool := range tools {
		count[tool.Name]++
	}
	if len(tools) != 4 || count["tool_search"] != 1 || count["call_tool"] != 1 {
		t.Fatalf("tools/list = %q, want toolsift's tool_search and call_tool once each and the upstream's renamed", names(tools))
	}
	for _, tool := range tools {
		if (tool.Name == "tool_search" || tool.Name == "call_tool") && strings.Contains(tool.Description, "not toolsift's") {
			t.Errorf("%s is the upstream's: %q", tool.Name, tool.Description)
		}
	}
	if sr := c.search("select:tool_search", 5); len(sr.Matches) != 1 || sr.Matches[0].Name == "tool_search" {
		t.Errorf("select:tool_search = %q, want the upstream's under its new name", matchNames(sr))
	}
}

// TestHungCallsNeverStarveSearch: over stdio, with as many hung calls in flight as maxCalls
// allows, tool_search still answers and one call more is refused at once, rather than
// everything waiting for callTimeout behind mcp-go's five workers.
func TestHungCallsNeverStarveSearch(t *testing.T) {
	c := proxy(t, "maxCalls: 6\ncallTimeout: 5m\nmcpServers:"+githubFixture(t, ""))
	c.search("select:github__hang", 1)
	for range 6 {
		go c.tryRequest("tools/call", map[string]any{"name": "github__hang", "arguments": map[string]any{}}, 5*time.Minute)
	}
	time.Sleep(time.Second) // for the six to reach the server; nothing below depends on how long they take
	m, err := c.tryRequest("tools/call", map[string]any{"name": "tool_search", "arguments": map[string]any{"query": "create issue"}}, 20*time.Second)
	if err != nil || !bytes.Contains(m.Result, []byte("github__create_issue")) {
		t.Fatalf("tool_search with 6 hung calls in flight = %s, %v", m.Result, err)
	}
	m, err = c.tryRequest("tools/call", map[string]any{"name": "github__hang", "arguments": map[string]any{}}, 20*time.Second)
	if err != nil || !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte("too many calls in flight in this session: 6")) {
		t.Errorf("a seventh call = %s, %v; want it refused at once", m.Result, err)
	}
}

// TestPropertyNamesClientsRefuseAreMapped: twilio's StartTime< is shown as StartTime_lt, in
// tools/list and in tool_search, and a call with StartTime_lt reaches twilio as StartTime<.
func TestPropertyNamesClientsRefuseAreMapped(t *testing.T) {
	c := proxy(t, fmt.Sprintf("mcpServers:\n  twilio:\n    command: %q\n    args: [--catalog, %q, --builtins=false]\n", fixtureBin, catalog(t, "twilio")))
	const name = "twilio__TwilioApiV2010--ListCall"
	sr := c.search("select:"+name, 1)
	if len(sr.Matches) != 1 {
		t.Fatalf("matches = %q", matchNames(sr))
	}
	for _, schema := range []json.RawMessage{sr.Matches[0].InputSchema, toolNamed(t, c.waitTool(name), name).InputSchema} {
		if !bytes.Contains(schema, []byte(`"StartTime_lt":`)) || !bytes.Contains(schema, []byte(`"EndTime_gt":`)) || bytes.Contains(schema, []byte(`"StartTime<"`)) {
			t.Errorf("schema = %s, want StartTime< and EndTime> renamed", schema)
		}
	}
	res, _ := c.call(name, map[string]any{"AccountSid": "AC1", "StartTime_lt": "2026-01-01", "EndTime>": "kept as sent"})
	var echoed struct{ Arguments map[string]string } // the fixture echoes what it got
	json.Unmarshal([]byte(res.Text()), &echoed)
	want := map[string]string{"AccountSid": "AC1", "StartTime<": "2026-01-01", "EndTime>": "kept as sent"}
	if res.IsError || !maps.Equal(echoed.Arguments, want) {
		t.Errorf("twilio got %v, want %v (StartTime_lt under its own name)", echoed.Arguments, want)
	}
}

func toolNamed(t *testing.T, tools []Tool, name string) Tool {
	t.Helper()
	for _, tool := range tools {
		if tool.Name == name {
			return tool
		}
	}
	t.Fatalf("%s not listed", name)
	return Tool{}
}

// TestTypeScriptClientKeepsEveryTool: the official TypeScript SDK's client validates each
// tool of a tools/list answer and refuses the whole answer over one bad schema. With gitlab's
// (no "type": "object") and twilio's (StartTime<) tools unlocked, it still lists them all,
// tool_search and call_tool included.
func TestTypeScriptClientKeepsEveryTool(t *testing.T) {
	cfg := config(t, fmt.Sprintf("mcpServers:\n  gitlab:\n    command: %q\n    args: [--catalog, %q, --builtins=false]\n  twilio:\n    command: %q\n    args: [--catalog, %q, --builtins=false]\n",
		fixtureBin, catalog(t, "gitlab"), fixtureBin, catalog(t, "twilio")))
	if _, err := os.Stat(filepath.Join("node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the TypeScript SDK is missing: run `npm ci` in tests/ (.ci/run does)")
	}
	cmd := exec.Command("node", "tsclient.mjs", bin, cfg, "select:gitlab__create_issue,twilio__TwilioApiV2010--ListCall")
	cmd.Env = isolatedEnv(t)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("TypeScript client: %v\n%s", err, stderr)
	}
	var got struct{ Before, After []string }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"tool_search", "call_tool", "gitlab__create_issue", "twilio__TwilioApiV2010--ListCall"}
	if !slices.Equal(got.After, want) {
		t.Errorf("TypeScript client lists %q after the search, want %q", got.After, want)
	}
}

// TestToolTooDeepIsSkippedAlone: a tool whose schema nests past what a decoder takes costs
// its server only that tool, with a log line naming it; a banner line on stdout is logged.
func TestToolTooDeepIsSkippedAlone(t *testing.T) {
	c := proxy(t, fmt.Sprintf("mcpServers:\n  odd:\n    command: %q\n    args: [--deep-tool, \"6000\", --garbage, \"odd server v1 ready\"]\n    startupTimeout: 10s\n", fixtureBin))
	sr := c.search("select:odd__echo,odd__deep", 2)
	if names := matchNames(sr); len(names) != 1 || names[0] != "odd__echo" || len(sr.Unavailable) > 0 {
		t.Errorf("select:odd__echo,odd__deep = %q (unavailable %q), want odd__echo alone", names, sr.Unavailable)
	}
	logs := c.Stderr()
	if !strings.Contains(logs, `msg="upstream tool skipped: nested too deep" upstream=odd tool=deep`) {
		t.Errorf("no log line names the skipped tool:\n%s", logs)
	}
	if !strings.Contains(logs, "not JSON-RPC") || !strings.Contains(logs, "odd server v1 ready") {
		t.Errorf("no log line for the banner:\n%s", logs)
	}
}

// TestResultOverTheLimit: an answer larger than maxResultBytes is not held: the call is an
// isError result naming the server and the limit, and the server goes on serving.
func TestResultOverTheLimit(t *testing.T) {
	c := proxy(t, "maxResultBytes: 100000\nmcpServers:"+githubFixture(t, ""))
	c.search("select:github__echo", 1)
	res, _ := c.call("github__echo", map[string]any{"message": strings.Repeat("x", 200_000)})
	if !res.IsError || !strings.Contains(res.Text(), `upstream "github"`) || !strings.Contains(res.Text(), "over 100000 bytes, toolsift's limit (maxResultBytes)") {
		t.Errorf("a 200 kB answer = %+v, want an error naming github and the limit", res)
	}
	if res, _ := c.call("github__echo", map[string]any{"message": "small"}); res.IsError || !strings.Contains(res.Text(), "small") {
		t.Errorf("the next call = %+v, want it served", res)
	}
}

// TestBigRequestIDsComeBackAsSent: a JSON-RPC id too long for a float64 is answered under the
// same id, byte for byte, over stdio and over HTTP.
func TestBigRequestIDsComeBackAsSent(t *testing.T) {
	const id = "123456789012345678901234567890"
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	ch := make(chan message, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
	select {
	case m := <-ch:
		if string(m.ID) != id || m.Error != nil {
			t.Errorf("stdio: answer %s to id %s", m.ID, id)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("stdio: no answer under id %s", id)
	}

	url := serveHTTP(t, "mcpServers:"+githubFixture(t, ""))
	init := post(t, url+"/mcp", nil, initBody)
	session := init.Header.Get("Mcp-Session-Id")
	_, body := do(t, http.MethodPost, url+"/mcp", map[string]string{"Mcp-Session-Id": session}, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
	if !bytes.Contains(body, []byte(`"id":`+id+`,`)) {
		t.Errorf("HTTP: answer %s, want id %s as sent", body, id)
	}
}

// TestCancelABigID: a notifications/cancelled naming a request by an id too long for a
// float64 cancels that request (mcp-go reads both ids the same, exactly), and no other.
func TestCancelABigID(t *testing.T) {
	const id, other = "123456789012345678901234567890", "123456789012345678901234567891"
	c := proxy(t, fmt.Sprintf("mcpServers:\n  a:\n    command: %q\n    callTimeout: 60s\n", fixtureBin))
	c.search("select:a__hang", 1)
	answers := make(map[string]chan message)
	c.mu.Lock()
	for _, each := range []string{id, other} {
		answers[each] = make(chan message, 1)
		c.waiting[each] = answers[each]
	}
	c.mu.Unlock()
	for _, each := range []string{id, other} {
		c.send(`{"jsonrpc":"2.0","id":` + each + `,"method":"tools/call","params":{"name":"a__hang","arguments":{}}}`)
	}
	time.Sleep(500 * time.Millisecond) // both under way upstream
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"user"}}`)
	select {
	case m := <-answers[id]:
		if string(m.ID) != id {
			t.Errorf("the cancelled call's answer came under id %s", m.ID)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the call with id %s was not cancelled", id)
	}
	select {
	case m := <-answers[other]:
		t.Errorf("the other call ended too: %+v", m)
	case <-time.After(time.Second):
	}
}

// TestHungServerHoldsFewCalls: a server that hangs is sent at most its concurrency of calls;
// one more waits its turn in the server's own queue, until a hung call gives its slot up at
// callTimeout, while other servers are called as ever.
func TestHungServerHoldsFewCalls(t *testing.T) {
	c := proxy(t, fmt.Sprintf("mcpServers:\n  a:\n    command: %q\n    concurrency: 3\n    callTimeout: 3s\n  b:\n    command: %q\n", fixtureBin, fixtureBin))
	c.search("select:a__hang,a__echo,b__echo", 3)
	for range 3 {
		go c.tryRequest("tools/call", map[string]any{"name": "a__hang", "arguments": map[string]any{}}, 5*time.Minute)
	}
	time.Sleep(time.Second) // for the three to be under way, before a fourth competes with them
	fourth := make(chan CallResult, 1)
	go func() {
		res, _ := c.call("a__echo", map[string]any{"message": "x"})
		fourth <- res
	}()
	if res, _ := c.call("b__echo", map[string]any{"message": "fine"}); res.IsError || !strings.Contains(res.Text(), "fine") {
		t.Errorf("b while a is full = %+v", res)
	}
	if res := <-fourth; res.IsError {
		t.Errorf("a fourth call to a = %+v, want it served once a slot was free", res)
	}
	// The fourth reached a only after the hung calls gave their slots up. The call's log line
	// is written after its answer is sent, so wait for it.
	eventually(t, 10*time.Second, "the a__echo call to be logged", func() bool {
		return strings.Contains(c.Stderr(), `msg="tool call" session=stdio tool=a__echo`)
	})
	logs := c.Stderr()
	echoed := strings.Index(logs, `msg="tool call" session=stdio tool=a__echo`)
	if hung := strings.Count(logs[:max(echoed, 0)], `tool=a__hang upstream=a`); echoed < 0 || hung < 1 {
		t.Errorf("a__echo was served before any hung call ended:\n%s", logs)
	}
}

// TestStdioRequestOverTheLimit: a request over 4 MiB is answered with an error and not held
// whole, and the next request is served.
func TestStdioRequestOverTheLimit(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	ch := make(chan message, 1)
	c.mu.Lock()
	c.waiting[`"huge"`] = ch
	c.mu.Unlock()
	c.send(`{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"github__echo","arguments":{"message":"` + strings.Repeat("x", 5<<20) + `"}}}`)
	select {
	case m := <-ch:
		if m.Error == nil || !strings.Contains(m.Error.Message, "request over 4194304 bytes, toolsift's limit") {
			t.Errorf("answer to a 5 MiB request = %+v", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to a 5 MiB request")
	}
	if sr := c.search("create issue", 1); len(sr.Matches) != 1 {
		t.Errorf("the next request = %+v", sr)
	}
}

// TestHTTPResultOverTheLimit: over streamable HTTP and SSE too, an answer past
// maxResultBytes is never held whole: the call is an error naming the server (and, over
// streamable HTTP, the limit; over SSE the stream ends, and the log says why), and the server
// is called as ever after it.
func TestHTTPResultOverTheLimit(t *testing.T) {
	addr := startHTTPFixture(t)
	c := proxy(t, fmt.Sprintf("maxResultBytes: 100000\nmcpServers:\n  web:\n    type: http\n    url: %s/mcp\n  legacy:\n    type: sse\n    url: %s/sse\n", addr, addr))
	c.search("select:web__echo,legacy__echo", 2)
	for _, name := range []string{"web__echo", "legacy__echo"} {
		res, _ := c.call(name, map[string]any{"message": strings.Repeat("x", 200_000)})
		server, _, _ := strings.Cut(name, "__")
		if !res.IsError || !strings.Contains(res.Text(), `upstream "`+server+`"`) || name == "web__echo" && !strings.Contains(res.Text(), "over 100000 bytes, toolsift's limit (maxResultBytes)") {
			t.Errorf("%s of 200 kB = %.300s, want an error naming the server and the limit", name, res.Text())
		}
		eventually(t, 20*time.Second, name+" to serve again", func() bool {
			res, _ := c.call(name, map[string]any{"message": "small"})
			return !res.IsError && strings.Contains(res.Text(), "small")
		})
	}
}

// TestBrokenConfigReachesTheClient (issue 33, row 3): with a typo in its configuration,
// toolsift still answers the official TypeScript client's initialize (no closed
// connection), runs nothing, and its tool_search description and answer carry the
// FILE:LINE message and its fix.
func TestBrokenConfigReachesTheClient(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolsift.yaml")
	yaml := fmt.Sprintf("mcpServers:\n  gh:\n    command: %q\n    args: [--pid-dir, %q]\n    comand: typo\n", fixtureBin, dir)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "tsclient.mjs", bin, cfg, "create issue")
	cmd.Env = isolatedEnv(t)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	want := cfg + ":5: mcpServers.gh.comand: unknown key; did you mean command?"
	if err == nil || !strings.Contains(stderr.String(), "tool_search: ") || !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "Connection closed") {
		t.Errorf("TypeScript client = %v\n%s\nwant tool_search's answer to carry %q", err, stderr.String(), want)
	}
	c := start(t, bin, "--config", cfg)
	c.initialize()
	var desc string
	for _, tool := range c.listTools() {
		if tool.Name == "tool_search" {
			desc = tool.Description
		}
	}
	if !strings.Contains(desc, want) || !strings.Contains(desc, "fix the file, then restart the client") {
		t.Errorf("tool_search's description = %q, want the error and its fix", desc)
	}
	if res, _ := c.call("gh__echo", map[string]any{"message": "x"}); !res.IsError || !strings.Contains(res.Text(), want) {
		t.Errorf("a call = %+v, want the error", res)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a server of the broken file ran: %v", entries)
	}
}

// TestHTTPUpstreamAsksItsClient: a streamable-HTTP server asks its client mid-call (roots
// here; sampling and elicitation go the same way) on the GET stream, which toolsift opens:
// the call completes with the client's answer instead of hanging until callTimeout. Both
// plain and stateful servers.
func TestHTTPUpstreamAsksItsClient(t *testing.T) {
	for _, flags := range [][]string{{"--conformance"}, {"--conformance", "--stateful"}} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			base, _ := startHTTPFixtureAt(t, "127.0.0.1:0", flags...)
			c := start(t, bin, "--config", config(t, fmt.Sprintf("mcpServers:\n  web:\n    url: %s/mcp\n    callTimeout: 20s\n", base)))
			c.initializeWith(map[string]any{"roots": map[string]any{}})
			began := time.Now()
			res, _ := c.call("call_tool", map[string]any{"name": "web__test_input_required_result_list_roots", "arguments": map[string]any{}})
			if res.IsError || !strings.Contains(res.Text(), "file:///toolsift-e2e-root") || time.Since(began) > 10*time.Second {
				t.Errorf("a call whose server asks for the client's roots: %q after %v", res.Text(), time.Since(began))
			}
		})
	}
}
