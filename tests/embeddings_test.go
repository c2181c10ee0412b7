package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/embedtest"
)

// runCLIWith runs the toolsift binary in env and returns its stdout, stderr and exit code.
func runCLIWith(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
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

// embeddingsConfig configures the github fixture, and search.embeddings at the fake API
// when api is not nil.
func embeddingsConfig(t *testing.T, api *embedtest.Server) string {
	search := ""
	if api != nil {
		search = fmt.Sprintf("search:\n  embeddings:\n    url: %s\n    model: fake\n    apiKey: ${FAKE_EMBEDDINGS_KEY:-sk-test}\n    timeout: 2s\n", api.Base())
	}
	return config(t, search+"mcpServers:"+githubFixture(t, ""))
}

// toolInputs returns the inputs the fake API was asked to embed that are tool texts, not
// queries: those with a description after the name.
func toolInputs(api *embedtest.Server) []string {
	_, inputs := api.Requests()
	var out []string
	for _, in := range inputs {
		if strings.Contains(in, ": ") {
			out = append(out, in)
		}
	}
	return out
}

// TestEmbeddingsSearchAndEval: toolsift search and eval rank by meaning with
// search.embeddings, so that a request sharing no word with its tool finds it, and not
// without; the vectors are computed once and read from the cache after.
func TestEmbeddingsSearchAndEval(t *testing.T) {
	api := embedtest.New(t)
	env := isolatedEnv(t)
	withEmb, words := embeddingsConfig(t, api), embeddingsConfig(t, nil)

	out, errOut, code := runCLIWith(t, env, "search", "--config", words, "-n", "3", "lodge", "a", "complaint")
	if code != 0 || !strings.Contains(out, "no tool matched") {
		t.Fatalf("search by words = %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = runCLIWith(t, env, "search", "--config", withEmb, "-n", "3", "lodge", "a", "complaint")
	if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "github__create_issue") {
		t.Fatalf("search with embeddings = %d\n%s%s", code, out, errOut)
	}
	computed := len(toolInputs(api))
	if computed < githubTools {
		t.Errorf("%d tool vectors computed, want at least the %d github tools", computed, githubTools)
	}
	if auth := api.Authorization(); len(auth) == 0 || auth[0] != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want the configured apiKey", auth)
	}

	cases := filepath.Join(t.TempDir(), "cases.yaml")
	os.WriteFile(cases, []byte(`- query: lodge a complaint
  want: github__create_issue
- query: raise a grievance
  want: github__create_issue
- query: create an issue
  want: github__create_issue
`), 0o644)
	recall := func(cfg string) string {
		t.Helper()
		out, errOut, code := runCLIWith(t, env, "eval", "--config", cfg, "--cases", cases, "--k", "1")
		if code != 0 {
			t.Fatalf("eval = %d\n%s%s", code, out, errOut)
		}
		if strings.Contains(errOut, "ranked by words alone") {
			t.Errorf("eval fell back to words:\n%s", errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "recall@1") {
				return strings.TrimSpace(strings.TrimPrefix(line, "recall@1"))
			}
		}
		t.Fatalf("eval printed no recall@1:\n%s", out)
		return ""
	}
	if got := recall(words); got != "0.333" {
		t.Errorf("eval by words: recall@1 %s, want 0.333 (only the case that names the tool)", got)
	}
	if got := recall(withEmb); got != "1.000" {
		t.Errorf("eval with embeddings: recall@1 %s, want 1.000", got)
	}
	if n := len(toolInputs(api)); n != computed {
		t.Errorf("eval computed %d tool vectors again; they are cached", n-computed)
	}
}

// TestEmbeddingsServe: tool_search through the binary finds a tool by meaning once its
// vectors are in, computes them once across restarts, and with the API failing answers by
// words at once.
func TestEmbeddingsServe(t *testing.T) {
	api := embedtest.New(t)
	env := isolatedEnv(t)
	cfg := embeddingsConfig(t, api)

	c := startWith(t, env, bin, "--config", cfg, "--log-level", "debug")
	c.relist = true
	t.Cleanup(func() { c.checkStdout() })
	c.initialize()
	// The vectors are computed in the background; a search before them ranks by words.
	deadline := time.Now().Add(30 * time.Second)
	for {
		sr := c.search("lodge a complaint", 3)
		if len(sr.Matches) > 0 && sr.Matches[0].Name == "github__create_issue" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tool_search never found github__create_issue by meaning: %+v\n%s", sr, c.Stderr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.stdin.Close()
	<-c.done
	computed := toolInputs(api)
	if len(computed) < githubTools {
		t.Fatalf("%d tool vectors computed, want at least %d", len(computed), githubTools)
	}

	// A restart computes no tool vector: they are on disk.
	second := startWith(t, env, bin, "--config", cfg)
	second.relist = true
	t.Cleanup(func() { second.checkStdout() })
	second.initialize()
	deadline = time.Now().Add(30 * time.Second)
	for {
		sr := second.search("lodge a complaint", 3)
		if len(sr.Matches) > 0 && sr.Matches[0].Name == "github__create_issue" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second run: %+v\n%s", sr, second.Stderr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if again := toolInputs(api); len(again) != len(computed) {
		t.Errorf("the restart computed %d tool vectors, want none: %q", len(again)-len(computed), again[len(computed):])
	}

	// The API fails: the search answers by words (nothing matches those words), at once
	// and without an error, and the log says why.
	api.SetMode(embedtest.Status500)
	start := time.Now()
	if sr := second.search("lodge a complaint", 3); len(sr.Matches) != 0 || !strings.HasPrefix(sr.Hint, "No tool matched") {
		t.Errorf("with the API failing = %+v, want the words' answer: none", sr)
	}
	if sr := second.search("create issue", 1); len(sr.Matches) != 1 || sr.Matches[0].Name != "github__create_issue" {
		t.Errorf("with the API failing, a search by words = %+v", sr)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("two searches with the API failing took %v", took)
	}
	waitFor(t, func() bool { return strings.Contains(second.Stderr(), "query vectors failing") }, "a log line about the failing API")
	if n := strings.Count(second.Stderr(), "query vectors failing"); n != 1 {
		t.Errorf("%d log lines about the failing API, want 1", n)
	}
	if i := second.lineIndex(`"isError":true`); i >= 0 {
		t.Errorf("a search answered an error: %s", second.lines[i])
	}
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
