package tests

import (
	"encoding/json"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// searchTimes runs tshabit.mjs: a session of the official TypeScript client under the given
// clientInfo, which never re-lists, timing its first two tool_search calls.
func searchTimes(t *testing.T, env []string, cfg, name, version string) (first, second time.Duration) {
	t.Helper()
	cmd := exec.Command("node", "tshabit.mjs", bin, cfg, name, version, "create issue", "list pull requests")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("tshabit.mjs as %s: %v\n%s", name, err, stderr)
	}
	var times struct{ First, Second float64 }
	if err := json.Unmarshal(out, &times); err != nil {
		t.Fatalf("tshabit.mjs printed %q: %v", out, err)
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return ms(times.First), ms(times.Second)
}

// Cursor (cursor-vscode) does not re-list mid-turn: its first search is not held.
func TestCursorFirstSearchNotHeld(t *testing.T) {
	env := isolatedEnv(t)
	cfg := config(t, "mcpServers:"+githubFixture(t, "    alwaysLoad: [search_issues]"))
	first, second := searchTimes(t, env, cfg, "cursor-vscode", "1.0.0")
	t.Logf("cursor-vscode: first search %v, second %v", first, second)
	if first > second+100*time.Millisecond {
		t.Errorf("the first search took %v, the second %v: the first was held", first, second)
	}
	out, _ := runIn(t, env, "", "status", "--config", cfg)
	if !strings.Contains(out, "cursor-vscode 1") || !strings.Contains(out, "does not wait: it does not re-list mid-turn") || !strings.Contains(out, "known") {
		t.Errorf("status does not show Cursor's habit:\n%s", out)
	}
}

// A client toolsift does not know pays the hold once: its first session's first search
// holds until the cap, and the next session, in another toolsift process, does not. Two
// processes learning two clients at once keep both.
func TestUnknownClientHoldsOnce(t *testing.T) {
	env := isolatedEnv(t)
	cfg := config(t, "mcpServers:"+githubFixture(t, "    alwaysLoad: [search_issues]"))
	first, second := searchTimes(t, env, cfg, "our-agent", "3.1.0")
	t.Logf("our-agent, first session: first search %v, second %v", first, second)
	if first < time.Second || second > first/2 {
		t.Fatalf("first session: first search %v, second %v; want the first held (up to 1.5 s), not the second", first, second)
	}
	first, second = searchTimes(t, env, cfg, "our-agent", "3.4.2")
	t.Logf("our-agent, next session: first search %v, second %v", first, second)
	if first > second+100*time.Millisecond {
		t.Errorf("the next session's first search took %v (second %v): held again", first, second)
	}
	// A new major version is learned anew.
	if first, _ := searchTimes(t, env, cfg, "our-agent", "4.0"); first < time.Second {
		t.Errorf("a new major version's first search took %v: not learned anew", first)
	}

	var wg sync.WaitGroup
	for _, name := range []string{"agent-a", "agent-b"} {
		wg.Go(func() { searchTimes(t, env, cfg, name, "1") })
	}
	wg.Wait()
	out, _ := runIn(t, env, "", "status", "--config", cfg)
	for _, want := range []string{"our-agent 3", "our-agent 4", "agent-a 1", "agent-b 1"} {
		if !strings.Contains(out, want+" ") {
			t.Errorf("status lacks %q", want)
		}
	}
	if !strings.Contains(out, "learned on "+time.Now().UTC().Format(time.DateOnly)) || t.Failed() {
		t.Errorf("status:\n%s", out)
	}
}

// A client that re-lists, as Claude Code does, is still held in its next session, in
// another process: the unlocked tool is listed before the result arrives.
func TestRelistingClientStillHeld(t *testing.T) {
	env := isolatedEnv(t)
	cfg := config(t, "mcpServers:"+githubFixture(t, ""))
	for session := range 2 {
		c := startWith(t, env, bin, "--config", cfg, "--log-level", "debug")
		c.relist = true
		c.initialize()
		sr := c.search("create issue", 1)
		if len(sr.Unlocked) != 1 {
			t.Fatalf("session %d: unlocked %q", session, sr.Unlocked)
		}
		eventually(t, 5*time.Second, "the search logged", func() bool { return strings.Contains(c.Stderr(), `msg="tool search"`) })
		if !strings.Contains(c.Stderr(), "hold=relisted") {
			t.Errorf("session %d: the search was not held until the re-list:\n%s", session, c.Stderr())
		}
		c.checkStdout()
	}
}
