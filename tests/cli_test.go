package tests

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runCLI runs the toolsift binary and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = isolatedEnv(t)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func cloudledger(t *testing.T) (cases, tools string) {
	dir := filepath.Join(catalogs, "..", "cloudledger")
	return filepath.Join(dir, "cases.yaml"), filepath.Join(dir, "cloudledger.json")
}

func TestSearchCommand(t *testing.T) {
	out, errOut, code := runCLI(t, "search", "--tools", catalog(t, "github"), "--tools", catalog(t, "slack"), "-n", "3", "create", "issue")
	if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "github__create_issue") {
		t.Fatalf("search = %d\n%s%s", code, out, errOut)
	}
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 3 {
		t.Errorf("-n 3 printed %d lines:\n%s", n, out)
	}
	out, _, code = runCLI(t, "search", "--tools", catalog(t, "slack"), "server:slack", "post", "message")
	if code != 0 || !strings.Contains(out, "slack__slack_post_message") {
		t.Errorf("server: query = %d\n%s", code, out)
	}
	for _, args := range [][]string{
		{"search", "create"},                            // no catalog
		{"search", "--tools", catalog(t, "github")},     // no query
		{"search", "--tools", "/nonexistent.json", "x"}, // missing file
	} {
		if _, errOut, code := runCLI(t, args...); code == 0 || errOut == "" {
			t.Errorf("%q exited %d with stderr %q, want an error", args, code, errOut)
		}
	}
}

func TestEvalCommand(t *testing.T) {
	cases, tools := cloudledger(t)
	out, errOut, code := runCLI(t, "eval", "--cases", cases, "--tools", tools, "--json", "--min", "1=0.70,5=0.90")
	if code != 0 {
		t.Fatalf("eval exited %d: %s%s", code, out, errOut)
	}
	var rep struct {
		Cases  int                `json:"cases"`
		Recall map[string]float64 `json:"recall"`
		MRR    *float64           `json:"mrr"`
		Misses []struct {
			Query string `json:"query"`
			Want  any    `json:"want"`
			Rank  *int   `json:"rank"`
		} `json:"misses"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if rep.Cases != 30 || len(rep.Recall) != 3 || rep.Recall["5"] < 0.9 || rep.MRR == nil {
		t.Errorf("report = %+v", rep)
	}
	for _, m := range rep.Misses {
		if m.Query == "" || m.Want == nil || m.Rank == nil {
			t.Errorf("miss lacks fields: %+v", m)
		}
	}
	// Text output, custom k, and a floor that is not met.
	out, errOut, code = runCLI(t, "eval", "--cases", cases, "--tools", tools, "--k", "2,10", "--min", "1=0.99")
	if code == 0 || !strings.Contains(out, "recall@2") || !strings.Contains(out, "recall@10") || !strings.Contains(errOut, "below the floor: recall@1") {
		t.Errorf("eval with an unmet floor = %d\n%s%s", code, out, errOut)
	}
	// A case naming a tool the catalog lacks is an error.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("- query: x\n  want: cloudledger__no_such_tool\n"), 0o644)
	if _, errOut, code := runCLI(t, "eval", "--cases", bad, "--tools", tools); code == 0 || !strings.Contains(errOut, "cloudledger__no_such_tool") {
		t.Errorf("eval of an unknown tool = %d, %q", code, errOut)
	}
	if _, errOut, code := runCLI(t, "eval", "--cases", cases, "--tools", tools, "--k", "0"); code != 2 {
		t.Errorf("--k 0 exited %d (%s), want 2", code, errOut)
	}
}

// TestSearchLiveConfigWithOverrides searches the servers of a configuration, live, and shows
// that per-tool keywords and descriptions reach both the ranking and the client.
func TestSearchLiveConfigWithOverrides(t *testing.T) {
	cfg := config(t, "mcpServers:"+githubFixture(t, `    alwaysLoad: [create_issue]
    tools:
      create_issue:
        keywords: [zebra, ticket]
        description: "File a GitHub issue (overridden)"
`))
	out, errOut, code := runCLI(t, "search", "--config", cfg, "-n", "1", "zebra")
	if code != 0 || !strings.Contains(out, "github__create_issue") || !strings.Contains(out, "overridden") {
		t.Fatalf("search --config = %d\n%s%s", code, out, errOut)
	}
	c := start(t, bin, "--config", cfg)
	c.initialize()
	tools := c.waitTool("github__create_issue")
	if tools[0].Description != "File a GitHub issue (overridden)" {
		t.Errorf("listed description = %q, want the override", tools[0].Description)
	}
	sr := c.search("zebra", 1)
	if len(sr.Matches) != 1 || sr.Matches[0].Name != "github__create_issue" {
		t.Errorf("tool_search by keyword = %+v", sr.Matches)
	}
}

func TestStatusCommand(t *testing.T) {
	cfg := config(t, fmt.Sprintf("mcpServers:%s  broken:\n    command: %q\n    args: [\"--fail\", \"no token\"]\n", githubFixture(t, ""), fixtureBin))
	env := isolatedEnv(t)
	status := func() string {
		cmd := exec.Command(bin, "status", "--config", cfg, "--wait", "20s")
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		// A server that failed makes status fail, so that scripts can check.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "1 of 2 servers failed: broken (see LAST ERROR") {
			t.Fatalf("status = %v, want exit status 1 naming broken\n%s", err, out)
		}
		return string(out)
	}
	first := status()
	n := githubTools + fixtureBuiltins
	github := regexp.MustCompile(fmt.Sprintf(`(?m)^github\s+connected\s+%d\s+none\s*$`, n))
	broken := regexp.MustCompile(`(?m)^broken\s+failed\s+0\s+none\s+connecting: .+; stderr: no token$`)
	if !github.MatchString(first) || !broken.MatchString(first) {
		t.Errorf("first status:\n%s", first)
	}
	// The first run cached github's catalog; the second reports its age.
	if second := status(); !regexp.MustCompile(fmt.Sprintf(`(?m)^github\s+connected\s+%d\s+\d+(\.\d+)?m?s\s*$`, n)).MatchString(second) {
		t.Errorf("second status does not show a cache age:\n%s", second)
	}
	// With every server working, status succeeds.
	out, errOut, code := runCLI(t, "status", "--config", config(t, "mcpServers:"+githubFixture(t, "")), "--wait", "20s")
	if code != 0 || !github.MatchString(out) {
		t.Errorf("status of working servers = %d\n%s%s", code, out, errOut)
	}
}

// TestNoWarningForWhatToolsiftCancels (issue 33, row 9): a server's lists still under way
// when toolsift stops are cut short by toolsift itself, which is no warning for the user
// (toolsift search and status stop their servers as soon as they have their answer).
func TestNoWarningForWhatToolsiftCancels(t *testing.T) {
	c := proxy(t, fmt.Sprintf("mcpServers:\n  fx:\n    command: %q\n    args: [--conformance, --slow-lists, 20s]\n", fixtureBin))
	c.search("select:fx__retool", 1)
	// The tool list changes: toolsift lists the server's tools, prompts and resources again,
	// and the prompts take their time.
	if res, _ := c.call("fx__retool", map[string]any{"add": []string{"new_tool"}}); res.IsError {
		t.Fatalf("retool = %+v", res)
	}
	time.Sleep(time.Second) // the list_changed is in, and the prompts list under way
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		t.Fatal("toolsift did not stop")
	}
	time.Sleep(200 * time.Millisecond) // its last log lines
	if strings.Contains(c.Stderr(), `level=WARN msg="upstream prompts not listed"`) || strings.Contains(c.Stderr(), `level=WARN msg="upstream resources not listed"`) {
		t.Errorf("toolsift warned of lists it cut short itself:\n%s", c.Stderr())
	}
}

// TestSmallMistakesNameTheFix (issue 33, row 11): a mistyped command or a duration without
// its unit says what was meant; status outside every project of a configuration that has
// only projects' servers says where to run it; the help of setup and import names every
// client.
func TestSmallMistakesNameTheFix(t *testing.T) {
	tests := []struct {
		args []string
		want string
		code int
	}{
		{[]string{"statu"}, `unknown command "statu" (did you mean status?)`, 2},
		{[]string{"setpu", "claude-code"}, "(did you mean setup?)", 2},
		{[]string{"status", "--wait", "2"}, "a duration takes a unit: did you mean 2s or 2m?", 2},
		{[]string{"search", "--wait=5", "x"}, "did you mean 5s or 5m?", 2},
		{[]string{"setup", "--help"}, "opencode or copilot", 0},
		{[]string{"import", "--help"}, "~/.copilot/mcp-config.json", 0},
		{[]string{"status", "--help"}, "-verbose", 0},
		{[]string{"status", "--wait", "5s", "--config", config(t, "mcpServers: {}\nprojects:\n  /nowhere/app:\n    mcpServers:\n      a: {command: x}\n      b: {command: y}\n")},
			"none here: 2 servers belong to projects, served only in their folders; run toolsift status in one of them", 0},
	}
	for _, tt := range tests {
		out, errOut, code := runCLI(t, tt.args...)
		if code != tt.code || !strings.Contains(out+errOut, tt.want) {
			t.Errorf("toolsift %s = %d\n%s%s\nwant %d and %q", strings.Join(tt.args, " "), code, out, errOut, tt.code, tt.want)
		}
	}
}

// TestSetupWithoutAConfigSaysOnce (issue 33, row 10): setup with no configuration says
// once how to make one, naming the file toolsift will read.
func TestSetupWithoutAConfigSaysOnce(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(bin, "setup", "claude-code")
	cmd.Dir = home
	cmd.Env = append(isolatedEnv(t), "HOME="+home, "XDG_CONFIG_HOME=")
	out, _ := cmd.CombinedOutput()
	want := "toolsift import -o ~/.config/toolsift/config.yaml"
	if n := strings.Count(string(out), "toolsift import"); n != 1 || !strings.Contains(string(out), want) {
		t.Errorf("setup without a configuration said %d times how to import:\n%s\nwant once: %s", n, out, want)
	}
}

// TestAlwaysLoadCanBeRefused (issue 33, row 12): firecrawl marks two of its tools
// always-load itself; toolsift status shows them with their size, and alwaysLoad: false,
// on one tool or on the server, keeps them out of the first tools/list.
func TestAlwaysLoadCanBeRefused(t *testing.T) {
	server := func(extra string) string {
		return fmt.Sprintf("mcpServers:\n  fc:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n%s", fixtureBin, filepath.Join(catalogs, "firecrawl.json"), extra)
	}
	out, errOut, code := runCLI(t, "status", "--wait", "20s", "--config", config(t, server("")))
	if code != 0 || !strings.Contains(out, "always loaded, in every session's list from the start: 2 tools") || !strings.Contains(out, "fc__firecrawl_scrape (") {
		t.Errorf("status = %d\n%s%s\nwant the two always-loaded tools and their size", code, out, errOut)
	}
	tests := []struct {
		extra string
		want  []string // the firecrawl tools in the first list
	}{
		{"", []string{"fc__firecrawl_scrape", "fc__firecrawl_search"}},
		{"    tools:\n      firecrawl_scrape: {alwaysLoad: false}\n", []string{"fc__firecrawl_search"}},
		{"    alwaysLoad: false\n", nil},
	}
	for _, tt := range tests {
		c := proxy(t, server(tt.extra))
		c.search("select:fc__none", 1) // the catalog is in, and nothing unlocked
		var got []string
		for _, tool := range c.listTools() {
			if strings.HasPrefix(tool.Name, "fc__") {
				got = append(got, tool.Name)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("with %q the first list has %v, want %v", tt.extra, got, tt.want)
		}
	}
}

// TestMergeSaysWhatARemoveBringsBack (issue 33, row 8): a server taken out with toolsift
// remove that import --merge brings back (a client still lists it) is named as back, with
// how to keep it out; one merged for the first time is only added.
func TestMergeSaysWhatARemoveBringsBack(t *testing.T) {
	home := t.TempDir()
	env := append(isolatedEnv(t), "HOME="+home, "XDG_CONFIG_HOME=")
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "mem"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		out, code := runIn(t, env, home, args...)
		if code != 0 {
			t.Fatalf("toolsift %s = %d\n%s", strings.Join(args, " "), code, out)
		}
		return out
	}
	cfg := filepath.Join(home, "toolsift.yaml")
	run("import", "--client", "claude-code", "-o", cfg)
	run("add", "--config", cfg, "fetch", "--", "uvx", "mcp-server-fetch") // the README's: no clash with an import
	run("remove", "--config", cfg, "memory")
	out := run("import", "--client", "claude-code", "-o", cfg, "--merge")
	if !strings.Contains(out, "adding to "+cfg+": memory") || !strings.Contains(out, "memory is back: you took it out with toolsift remove on ") || !strings.Contains(out, "write disabled: true under it") {
		t.Errorf("import --merge after a remove said:\n%s\nwant it to name memory as back, and how to keep it out", out)
	}
	run("remove", "--config", cfg, "memory")
	run("remove", "--config", cfg, "fetch")
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "mem"]}, "notes": {"command": "npx", "args": ["-y", "notes"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out = run("import", "--client", "claude-code", "-o", cfg, "--merge")
	if strings.Contains(out, "notes is back") || !strings.Contains(out, "memory is back") {
		t.Errorf("a second merge said:\n%s\nwant memory back again, and notes only added", out)
	}
}
