//go:build unix

package tests

import (
	"bytes"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLazyStartAndIdleStop: with lazyStart and a cached catalog, toolsift answers
// initialize, tools/list and tool_search without starting the server; the first call starts
// it; idleTimeout stops it (and it is reaped); the next call starts it again.
func TestLazyStartAndIdleStop(t *testing.T) {
	dir := t.TempDir()
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf(`lazyStart: true
mcpServers:
  github:
    command: %q
    args: ["--catalog", %q, "--pid-dir", %q, "--start-delay", "300ms"]
    idleTimeout: 1s
`, fixtureBin, catalog(t, "github"), dir))

	// No cache yet: the server is started to learn its tools.
	if sr := warmCache(t, env, bin, cfg, "create issue"); len(sr.Matches) != 1 {
		t.Fatalf("first run: %+v", sr)
	}
	pids := starts(t, dir)
	if len(pids) != 1 {
		t.Fatalf("first run started the server %d times", len(pids))
	}
	eventually(t, 10*time.Second, "the server to stop with toolsift", func() bool { return !running(pids[0]) })

	second := startWith(t, env, bin, "--config", cfg, "--log-level", "debug")
	t.Cleanup(func() { second.checkStdout() })
	second.initialize()
	second.listTools()
	sr := second.search("create issue", 1)
	if len(sr.Matches) != 1 || sr.Matches[0].Name != "github__create_issue" || len(sr.Unavailable) != 0 {
		t.Fatalf("search from the cache = %+v", sr)
	}
	if n := len(starts(t, dir)); n != 1 {
		t.Fatalf("the lazy server was started before any call (%d starts)", n)
	}
	for round := 2; round <= 3; round++ {
		res, _ := second.call("github__create_issue", map[string]any{"owner": "o", "repo": "r", "title": "t"})
		if res.IsError {
			t.Fatalf("round %d: call of a lazy server: %s", round, res.Text())
		}
		pids := starts(t, dir)
		if len(pids) != round {
			t.Fatalf("round %d: %d starts", round, len(pids))
		}
		slices.Sort(pids)
		newest := pids[len(pids)-1]
		eventually(t, 10*time.Second, "the idle server to stop", func() bool { return !running(newest) })
	}
	if !strings.Contains(second.Stderr(), "upstream stopped while idle") {
		t.Errorf("no log of the idle stop:\n%s", second.Stderr())
	}
}

// TestCrashOnAGivenCall: the fixture exits on its second call; that call is an error naming
// the server, and the third call gets a fresh server (whose own second call would crash).
func TestCrashOnAGivenCall(t *testing.T) {
	dir := t.TempDir()
	c := proxy(t, fmt.Sprintf(`mcpServers:
  flaky:
    command: %q
    args: ["--crash-on-call", "2", "--pid-dir", %q]
`, fixtureBin, dir))
	c.search("select:flaky__echo", 1)
	for i, wantErr := range []bool{false, true, false} {
		res, _ := c.call("flaky__echo", map[string]any{"message": i})
		if res.IsError != wantErr {
			t.Fatalf("call %d: isError = %v: %s", i+1, res.IsError, res.Text())
		}
		if wantErr && (!strings.Contains(res.Text(), `upstream "flaky"`) || !strings.Contains(res.Text(), "exit status 4")) {
			t.Errorf("crash result %q does not name the server and the exit status", res.Text())
		}
	}
	if n := len(starts(t, dir)); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
}

// TestHungCallAndFrozenServer: a tool that never answers becomes an error after callTimeout
// while its server keeps serving; a server that stops answering altogether is detected by a
// ping, stopped (SIGTERM, then SIGKILL) and restarted.
func TestHungCallAndFrozenServer(t *testing.T) {
	dir := t.TempDir()
	c := proxy(t, fmt.Sprintf(`mcpServers:
  slow:
    command: %q
    args: ["--pid-dir", %q]
    callTimeout: 1s
`, fixtureBin, dir))
	c.search("select:slow__hang,slow__freeze,slow__echo", 3)
	res, _ := c.call("slow__hang", map[string]any{})
	if !res.IsError || !strings.Contains(res.Text(), `upstream "slow"`) || !strings.Contains(res.Text(), "no answer within 1s") {
		t.Fatalf("hung call = %+v", res)
	}
	if res, _ := c.call("slow__echo", map[string]any{}); res.IsError {
		t.Fatalf("echo after a hung call: %s", res.Text())
	}
	if n := len(starts(t, dir)); n != 1 {
		t.Fatalf("a server that still answers was restarted (%d starts)", n)
	}

	res, _ = c.call("slow__freeze", map[string]any{})
	if !res.IsError || !strings.Contains(res.Text(), "no answer within 1s") {
		t.Fatalf("call that froze the server = %+v", res)
	}
	frozen := starts(t, dir)[0]
	eventually(t, 30*time.Second, "a restarted server to answer", func() bool {
		res, _ := c.call("slow__echo", map[string]any{})
		return !res.IsError
	})
	if n := len(starts(t, dir)); n != 2 {
		t.Errorf("%d starts, want 2", n)
	}
	if running(frozen) {
		t.Errorf("the frozen server %d was not stopped", frozen)
	}
	if !strings.Contains(c.Stderr(), "stopped answering") {
		t.Errorf("the log does not say why the server was restarted")
	}
}

// TestToolListChanges: the server removes a tool the session unlocked; the session is told
// to re-list, the tool is gone from its list, and calling it says so.
func TestToolListChanges(t *testing.T) {
	c := proxy(t, "mcpServers:"+githubFixture(t, ""))
	c.search("select:github__retool", 1)
	if res, _ := c.call("github__retool", map[string]any{"add": []string{"temp_tool"}}); res.IsError {
		t.Fatal(res.Text())
	}
	eventually(t, 10*time.Second, "the new tool to be found", func() bool {
		return len(c.search("select:github__temp_tool", 1).Matches) == 1
	})
	if !slices.Contains(names(c.listTools()), "github__temp_tool") {
		t.Fatal("unlocked tool not listed")
	}
	before := c.notifications(listChanged)
	if res, _ := c.call("github__retool", map[string]any{"remove": []string{"temp_tool"}}); res.IsError {
		t.Fatal(res.Text())
	}
	if !c.waitNotification(listChanged, before+1, 10*time.Second) {
		t.Fatal("no list_changed after an unlocked tool vanished")
	}
	eventually(t, 10*time.Second, "the vanished tool to leave the list", func() bool {
		return !slices.Contains(names(c.listTools()), "github__temp_tool")
	})
	res, _ := c.call("github__temp_tool", map[string]any{})
	if !res.IsError || !strings.Contains(res.Text(), "is gone") {
		t.Errorf("call of a vanished tool = %+v", res)
	}
}

// TestRealServerKilledMidSession: server-memory, SIGKILLed between two calls, is reaped and
// restarted, and the session goes on with its data.
func TestRealServerKilledMidSession(t *testing.T) {
	c := proxy(t, "mcpServers:"+memoryServer(t))
	c.search("select:memory__create_entities,memory__read_graph", 2)
	res, _ := c.call("memory__create_entities", map[string]any{"entities": []map[string]any{
		{"name": "toolsift", "entityType": "project", "observations": []string{"survives SIGKILL"}},
	}})
	if res.IsError {
		t.Fatal(res.Text())
	}
	kids := childrenOf(t, c.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("toolsift has %d children, want 1 (server-memory)", len(kids))
	}
	if err := syscall.Kill(kids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "toolsift to notice", func() bool {
		return strings.Contains(c.Stderr(), "signal: killed")
	})
	res, _ = c.call("memory__read_graph", map[string]any{})
	if res.IsError || !strings.Contains(res.Text(), "survives SIGKILL") {
		t.Fatalf("read_graph after SIGKILL = %+v", res)
	}
	now := childrenOf(t, c.cmd.Process.Pid)
	if len(now) != 1 || now[0] == kids[0] {
		t.Errorf("children after the restart = %v (killed: %d): want one new one, the old reaped", now, kids[0])
	}
}

// TestHTTPUpstreamForgetsSession: an HTTP server restarted on the same address answers the
// old session with 404; toolsift starts a new session and sends the call again, so the
// client never sees the restart. While the server is down, calls fail at once naming it and
// searches list it as unavailable; when it is back, calls go through again.
func TestHTTPUpstreamForgetsSession(t *testing.T) {
	base, fixture := startHTTPFixtureAt(t, "127.0.0.1:0", "--stateful")
	addr := strings.TrimPrefix(base, "http://")
	c := proxy(t, fmt.Sprintf("mcpServers:\n  web:\n    url: %s/mcp\n", base))
	c.search("select:web__echo", 1)
	if res, _ := c.call("web__echo", map[string]any{"n": 1}); res.IsError {
		t.Fatal(res.Text())
	}
	stop := func() {
		fixture.cmd.Process.Kill()
		<-fixture.done
	}
	stop()
	_, fixture = startHTTPFixtureAt(t, addr, "--stateful")
	res, _ := c.call("web__echo", map[string]any{"n": 2})
	if res.IsError || !strings.Contains(res.Text(), `"n":2`) {
		t.Fatalf("call after the server restarted = %+v", res)
	}
	if !strings.Contains(c.Stderr(), "session ended by the server") {
		t.Errorf("the log does not show the lost session")
	}

	stop()
	res, _ = c.call("web__echo", map[string]any{"n": 3})
	if !res.IsError || !strings.Contains(res.Text(), `upstream "web"`) || !strings.Contains(res.Text(), "unreachable") {
		t.Fatalf("call while the server is down = %+v", res)
	}
	if sr := c.search("echo", 1); !slices.ContainsFunc(sr.Unavailable, func(u string) bool { return strings.HasPrefix(u, "web (failed): ") }) {
		t.Errorf("unavailable = %q while the server is down", sr.Unavailable)
	}
	startHTTPFixtureAt(t, addr, "--stateful")
	eventually(t, 10*time.Second, "calls to go through once the server is back", func() bool {
		res, _ := c.call("web__echo", map[string]any{"n": 4})
		return !res.IsError
	})
}

// TestSSEUpstreamReconnects: a legacy SSE server that goes away loses its event stream;
// toolsift notices, and once the server is back on the same address calls go through again.
func TestSSEUpstreamReconnects(t *testing.T) {
	base, fixture := startHTTPFixtureAt(t, "127.0.0.1:0")
	c := proxy(t, fmt.Sprintf("mcpServers:\n  legacy:\n    type: sse\n    url: %s/sse\n", base))
	c.search("select:legacy__echo", 1)
	if res, _ := c.call("legacy__echo", map[string]any{"n": 1}); res.IsError {
		t.Fatal(res.Text())
	}
	fixture.cmd.Process.Kill()
	<-fixture.done
	eventually(t, 10*time.Second, "toolsift to notice the lost stream", func() bool {
		return strings.Contains(c.Stderr(), "event stream lost")
	})
	startHTTPFixtureAt(t, strings.TrimPrefix(base, "http://"))
	eventually(t, 20*time.Second, "calls to go through once the server is back", func() bool {
		res, _ := c.call("legacy__echo", map[string]any{"n": 2})
		return !res.IsError
	})
}

// TestServerDiesWithToolsift: a server that ignores the end of its stdin must not outlive a
// toolsift killed with SIGKILL, which can stop nothing itself.
func TestServerDiesWithToolsift(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux kills a child when its parent dies")
	}
	// sleep never reads stdin, so it would run its 300 s as an orphan.
	cmd := exec.Command(bin, "--config", config(t, "mcpServers:\n  deaf:\n    command: sleep\n    args: [\"300\"]\n"))
	cmd.Env = isolatedEnv(t)
	stdin, _ := cmd.StdinPipe() // held open: toolsift serves until it is killed
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var child int
	eventually(t, 10*time.Second, "toolsift to start the server", func() bool {
		kids := childrenOf(t, cmd.Process.Pid)
		if len(kids) == 1 {
			child = kids[0]
		}
		return child != 0 && running(child)
	})
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) }) // so that a failure leaves nothing behind
	cmd.Process.Kill()
	cmd.Wait()
	eventually(t, 5*time.Second, fmt.Sprintf("server %d to die with toolsift", child), func() bool { return !running(child) })
}

// TestServerThatStopsReading: a server that stops reading its stdin, given a call whose
// arguments outgrow the pipe's buffer, costs that call callTimeout and nothing else: the
// write gives up, other servers answer meanwhile, and the server is restarted.
func TestServerThatStopsReading(t *testing.T) {
	c := proxy(t, fmt.Sprintf("callTimeout: 3s\nmcpServers:\n  a:\n    command: %q\n  b:\n    command: %q\n", fixtureBin, fixtureBin))
	c.search("select:a__freeze,a__echo,b__echo", 3)
	go c.tryRequest("tools/call", map[string]any{"name": "a__freeze", "arguments": map[string]any{}}, time.Minute)
	time.Sleep(500 * time.Millisecond) // for a to stop reading
	big := make(chan message, 1)
	go func() {
		m, _ := c.tryRequest("tools/call", map[string]any{"name": "a__echo", "arguments": map[string]any{"message": strings.Repeat("x", 256<<10)}}, time.Minute)
		big <- m
	}()
	if res, _ := c.call("b__echo", map[string]any{"message": "still here"}); res.IsError || !strings.Contains(res.Text(), "still here") {
		t.Errorf("b while a is stuck = %+v", res)
	}
	select {
	case m := <-big:
		if !bytes.Contains(m.Result, []byte(`"isError":true`)) || !bytes.Contains(m.Result, []byte(`upstream \"a\"`)) {
			t.Errorf("the call a never read = %s, want an error naming a", m.Result)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call to a server that stopped reading did not end within 30s (callTimeout 3s)")
	}
	eventually(t, 30*time.Second, "a to be restarted and answer", func() bool {
		m, err := c.tryRequest("tools/call", map[string]any{"name": "a__echo", "arguments": map[string]any{"message": "back"}}, 10*time.Second)
		return err == nil && bytes.Contains(m.Result, []byte("back")) && !bytes.Contains(m.Result, []byte(`"isError":true`))
	})
}

// TestSIGTERMAnswersEveryRequest: requests sent before SIGTERM all get an answer, those in
// flight their results, however many are queued.
func TestSIGTERMAnswersEveryRequest(t *testing.T) {
	// hang never answers: each call ends at callTimeout, so every one is still under way
	// when the signal comes, and 50 of them wait for a worker.
	c := proxy(t, "maxCalls: 200\nconcurrency: 200\ncallTimeout: 2s\nmcpServers:"+githubFixture(t, ""))
	c.search("select:github__hang", 1)
	const n = 150
	answers := make([]chan message, n)
	c.mu.Lock()
	for i := range answers {
		answers[i] = make(chan message, 1)
		c.waiting[fmt.Sprintf(`"hang-%d"`, i)] = answers[i]
	}
	c.mu.Unlock()
	for i := range n {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"hang-%d","method":"tools/call","params":{"name":"github__hang","arguments":{}}}`, i))
	}
	// toolsift reads its input in order: once the ping is answered, every call was read. A
	// request still in the pipe when the signal comes is not one toolsift took on.
	c.request("ping", nil)
	c.cmd.Process.Signal(syscall.SIGTERM)
	got := 0
	for _, ch := range answers {
		select {
		case m := <-ch:
			if m.Result != nil || m.Error != nil {
				got++
			}
		case <-time.After(30 * time.Second):
		}
	}
	if got != n {
		t.Errorf("%d of %d requests answered after SIGTERM", got, n)
	}
}

// TestWarmStartIsQuiet: with every catalog cached, servers that connect with what they had
// (one of them announcing a tool change as it starts, as server-everything does) send the
// client no list_changed of any kind: a client re-lists on each, and may drop its prompt
// cache. An always-load tool and cached prompts and resources are in play.
func TestWarmStartIsQuiet(t *testing.T) {
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf("mcpServers:\n  fx:\n    command: %q\n    args: [--conformance]\n    alwaysLoad: [echo]\n  every:\n    command: %q\n",
		fixtureBin, npmServer(t, "mcp-server-everything")))
	warmCache(t, env, bin, cfg, "select:fx__echo")
	c := startWith(t, env, bin, "--config", cfg, "--log-level", "debug")
	c.initialize()
	tools := names(c.listTools())
	eventually(t, 30*time.Second, "both servers to connect", func() bool {
		return strings.Count(c.Stderr(), `msg="upstream connected"`) == 2
	})
	time.Sleep(300 * time.Millisecond) // for a notification sent as the last one connected
	c.mu.Lock()
	notes := slices.Clone(c.notes)
	c.mu.Unlock()
	for _, m := range notes {
		t.Errorf("warm start sent %s", m.Method)
	}
	if after := names(c.listTools()); !slices.Equal(after, tools) || !slices.Contains(tools, "fx__echo") {
		t.Errorf("tools/list before the servers connected = %q, after = %q; want the same, with fx__echo", tools, after)
	}
}
