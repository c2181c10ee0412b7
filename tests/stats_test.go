package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// report mirrors what toolsift stats --json prints (stats.Report).
type report struct {
	Encoding string `json:"encoding"`
	Today    tally  `json:"today"`
	Week     tally  `json:"last7Days"`
	Clients  []struct {
		Name string `json:"name"`
		tally
	} `json:"clients"`
	Servers []struct {
		Name  string         `json:"name"`
		Calls map[string]int `json:"calls"`
	} `json:"servers"`
	Sessions []struct {
		ID, Client string
		tally
	} `json:"sessions"`
	Misses []struct {
		Query, Outcome, Used, UsedServer, UsedName string
		Results                                    []string
	} `json:"misses"`
}

type tally struct {
	Sessions, Requests, Searches, Hits, Misses int
	Direct                                     int64 `json:"directTokens"`
	Sent                                       int64 `json:"sentTokens"`
	Saved                                      int64 `json:"savedTokens"`
}

func statsReport(t *testing.T, env []string) report {
	t.Helper()
	out, stderr, code := runCLIWith(t, env, "stats", "--json")
	if code != 0 {
		t.Fatalf("toolsift stats --json: exit %d: %s", code, stderr)
	}
	var rep report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("toolsift stats --json: %v\n%s", err, out)
	}
	return rep
}

// nodeTokens counts the o200k tokens of each text with tests/tokens.mjs, an implementation
// of the tokenizer independent of toolsift's (gpt-tokenizer, in JavaScript).
func nodeTokens(t *testing.T, texts [][]byte) []int64 {
	t.Helper()
	dir := t.TempDir()
	args := []string{"tokens.mjs"}
	for i, text := range texts {
		p := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(p, text, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, err := exec.Command("node", args...).Output()
	if err != nil {
		t.Fatalf("node tokens.mjs: %v", err)
	}
	counts := make([]int64, len(texts))
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	re := regexp.MustCompile(`/(\d+)\t\d+ bytes\t(\d+) tokens$`)
	seen := 0
	for sc.Scan() {
		m := re.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		counts[i], _ = strconv.ParseInt(m[2], 10, 64)
		seen++
	}
	if seen != len(texts) {
		t.Fatalf("node tokens.mjs counted %d of %d texts:\n%s", seen, len(texts), out)
	}
	return counts
}

func sum(ns []int64) int64 {
	var s int64
	for _, n := range ns {
		s += n
	}
	return s
}

// The counts of a scripted session over the 41 real catalogs match a hand computation made
// with another implementation of the same tokenizer: every model request (a search or a
// call) would have carried all 1,142 tools listed directly, and carried the session's list
// as it was then; each search result is sent once.
func TestStatsCounting(t *testing.T) {
	cfg, tools := benchConfig(t, "")
	cache := t.TempDir()
	env := append(os.Environ(), "XDG_CACHE_HOME="+cache, "XDG_STATE_HOME="+t.TempDir(), "TOOLSIFT_TOKEN_STORE=file", "GORACE=atexit_sleep_ms=0")
	// Warmed with a state folder of its own: only the scripted session is counted.
	warm := append(os.Environ(), "XDG_CACHE_HOME="+cache, "XDG_STATE_HOME="+t.TempDir(), "TOOLSIFT_TOKEN_STORE=file", "GORACE=atexit_sleep_ms=0")
	warmCache(t, warm, bin, cfg, "create issue")

	c := startWith(t, env, bin, "--config", cfg)
	c.relist = true
	c.initialize()
	var lists [][]json.RawMessage // what each model request carried
	var results [][]byte          // each search's result text
	listed := func() {
		m := c.request("tools/list", nil)
		var l struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(m.Result, &l); err != nil {
			t.Fatal(err)
		}
		lists = append(lists, l.Tools)
	}
	search := func(q string) SearchResult {
		listed()
		res, _ := c.call("tool_search", map[string]any{"query": q, "max_results": 5})
		results = append(results, []byte(res.Text()))
		var sr SearchResult
		if err := json.Unmarshal([]byte(res.Text()), &sr); err != nil {
			t.Fatal(err)
		}
		return sr
	}
	callTool := func(name string) {
		listed()
		c.call("call_tool", map[string]any{"name": name, "arguments": map[string]any{}})
	}
	hit := search("create issue")
	callTool(hit.Matches[0].Name) // a hit
	search("frobnicate the wibble")
	other := search("send a slack message")
	var notFound string
	for _, name := range []string{"notion__API-post-page", "linear__create_issue", "github__create_pull_request"} {
		if !slices.Contains(matchNames(other), name) {
			notFound = name
			break
		}
	}
	callTool(notFound) // not among the last search's results: two likely misses
	c.stdin.Close()
	<-c.done

	rep := statsReport(t, env)
	const requests = 5
	if rep.Today.Requests != requests || rep.Today.Searches != 3 || rep.Today.Hits != 1 || rep.Today.Misses != 2 || rep.Today.Sessions != 1 {
		t.Errorf("today: %+v; want 5 requests, 3 searches, 1 hit, 2 misses, 1 session", rep.Today)
	}
	// By hand: every tool as its server lists it, and what the session was sent.
	direct := sum(nodeTokens(t, tools))
	var sentTexts [][]byte
	for _, l := range lists {
		for _, tool := range l {
			sentTexts = append(sentTexts, tool)
		}
	}
	sentTexts = append(sentTexts, results...)
	wantSent := sum(nodeTokens(t, sentTexts))
	within := func(what string, got, want int64, pct float64) {
		t.Helper()
		off := 100 * float64(got-want) / float64(want)
		t.Logf("%s: toolsift counted %d, by hand %d (%+.2f%%)", what, got, want, off)
		if off > pct || off < -pct {
			t.Errorf("%s: %d, want %d within %.1f%%", what, got, want, pct)
		}
	}
	// toolsift re-encodes the servers' definitions (a repaired schema, members in its order).
	within("direct tokens", rep.Today.Direct, requests*direct, 1)
	within("sent tokens", rep.Today.Sent, wantSent, 0.5)
	var frob, slack bool
	for _, m := range rep.Misses {
		switch m.Query {
		case "frobnicate the wibble":
			frob = m.Outcome == "searched again" && m.Used == notFound
		case "send a slack message":
			slack = m.Outcome == "called another tool" && m.Used == notFound && m.UsedName != "" && m.UsedServer == strings.SplitN(notFound, "__", 2)[0]
		}
	}
	if !frob || !slack || len(rep.Misses) != 2 {
		t.Errorf("misses: %+v; want the two last searches, leading to %s", rep.Misses, notFound)
	}
	if len(rep.Sessions) != 1 || rep.Sessions[0].Requests != requests || rep.Sessions[0].Sent != rep.Today.Sent {
		t.Errorf("sessions: %+v; want the one session, with every request", rep.Sessions)
	}
	if len(rep.Clients) != 1 || rep.Clients[0].Saved != rep.Today.Saved || rep.Today.Saved < 4*300000 {
		t.Errorf("clients: %+v, today saved %d", rep.Clients, rep.Today.Saved)
	}
	out, _, code := runCLIWith(t, env, "stats")
	if code != 0 || !strings.Contains(out, "frobnicate the wibble") || !strings.Contains(out, "o200k_base") {
		t.Errorf("toolsift stats:\n%s", out)
	}
}

// benchConfig writes a configuration of the 41 real catalogs, served by the fixture, with
// extra YAML at the top; it returns it and every tool of them as its server lists it.
func benchConfig(t *testing.T, extra string) (string, [][]byte) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(catalogs, "*.json"))
	var cfg strings.Builder
	cfg.WriteString(extra + "mcpServers:\n")
	var tools [][]byte
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if name == "azure-all" {
			continue // an alternative view of azure
		}
		fmt.Fprintf(&cfg, "  %s:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n", name, fixtureBin, f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			compact, _ := json.Marshal(tool)
			tools = append(tools, compact)
		}
	}
	return config(t, cfg.String()), tools
}

// Each tool_search result ends with one line of what toolsift saves, unless the
// configuration turns it off.
func TestSavingsLine(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  *regexp.Regexp
	}{
		{"", regexp.MustCompile(`^toolsift: 1,1\d\d tools behind this search, ~3\d\dk tokens not sent$`)},
		{"search:\n  savingsLine: false\n", nil},
	} {
		cfg, _ := benchConfig(t, tc.extra)
		env := isolatedEnv(t)
		warmCache(t, env, bin, cfg, "create issue")
		c := startWith(t, env, bin, "--config", cfg)
		c.relist = true
		c.initialize()
		search := func() string {
			res, _ := c.call("tool_search", map[string]any{"query": "create issue"})
			var r struct{ Savings string }
			if err := json.Unmarshal([]byte(res.Text()), &r); err != nil {
				t.Fatal(err)
			}
			return r.Savings
		}
		if tc.want != nil {
			// The first catalogs counted may hold the servers connected so far.
			var line string
			ok := false
			for end := time.Now().Add(30 * time.Second); !ok && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				line = search()
				ok = tc.want.MatchString(line)
			}
			if !ok {
				t.Errorf("savings line %q, want %v", line, tc.want)
			}
			continue
		}
		// Off: no line before the catalog is counted (the stats show a request with it),
		// nor for a while after.
		eventually(t, 30*time.Second, "the catalog counted", func() bool {
			return search() == "" && statsReport(t, env).Today.Direct > 0
		})
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			if line := search(); line != "" {
				t.Fatalf("savingsLine: false, and a result has the line %q", line)
			}
		}
	}
}

// Several toolsift processes of the user count into the same store at once, and none of
// their counts is lost.
func TestStatsFromTwoProcesses(t *testing.T) {
	cfg := config(t, fmt.Sprintf("mcpServers:\n  github:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n", fixtureBin, catalog(t, "github")))
	env := isolatedEnv(t)
	const each = 30
	var wg sync.WaitGroup
	for range 2 {
		c := startWith(t, env, bin, "--config", cfg)
		c.relist = true
		c.initialize()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				c.call("tool_search", map[string]any{"query": fmt.Sprint("issue ", i)})
			}
			c.stdin.Close()
			<-c.done
		}()
	}
	wg.Wait()
	rep := statsReport(t, env)
	if rep.Today.Searches != 2*each || rep.Today.Requests != 2*each || rep.Today.Sessions != 2 {
		t.Errorf("today: %+v; want %d searches and requests, 2 sessions", rep.Today, 2*each)
	}
}

// A query that quotes a secret of the configuration is kept masked: the model may have
// been shown it, and the stats are shown to whoever opens the dashboard.
func TestStatsMaskSecretsInQueries(t *testing.T) {
	const secret = "ghp_querysecret0123456789abcdef"
	cfg := config(t, fmt.Sprintf("mcpServers:\n  github:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n    env: {GITHUB_TOKEN: %s}\n",
		fixtureBin, catalog(t, "github"), secret))
	env := isolatedEnv(t)
	c := startWith(t, env, bin, "--config", cfg)
	c.relist = true
	c.initialize()
	c.call("tool_search", map[string]any{"query": "use token " + secret + " to list issues"})
	c.stdin.Close()
	<-c.done
	out, _, code := runCLIWith(t, env, "stats", "--json")
	if code != 0 || strings.Contains(out, secret) || !strings.Contains(out, "use token [redacted] to list issues") {
		t.Errorf("toolsift stats --json (exit %d) keeps the query as:\n%s", code, out)
	}
}
