package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/config"
)

// TestMain lets the test binary be a real stdio MCP server (TOOLSIFT_TEST_UPSTREAM=1) or a
// process that only sleeps (TOOLSIFT_TEST_SLEEP=1), so these tests start, crash and reap
// real child processes without building anything.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv("TOOLSIFT_TEST_SLEEP") == "1":
		time.Sleep(time.Hour)
		os.Exit(0)
	case os.Getenv("TOOLSIFT_TEST_UPSTREAM") == "1":
		testUpstream()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testUpstream serves echo, crash (exit 4) and spawn (start a sleeping grandchild and
// return its PID) over stdio.
func testUpstream() {
	s := mcpserver.NewMCPServer("test", "1.0.0", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo"), nil
	})
	s.AddTool(mcp.NewTool("crash"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		os.Exit(4)
		return nil, nil
	})
	s.AddTool(mcp.NewTool("spawn"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "TOOLSIFT_TEST_SLEEP=1", "TOOLSIFT_TEST_UPSTREAM=0")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(strconv.Itoa(cmd.Process.Pid)), nil
	})
	_ = mcpserver.NewStdioServer(s).Listen(context.Background(), os.Stdin, os.Stdout)
}

func testServer(name string) config.Server {
	return config.Server{
		Name: name, Prefix: name, Type: config.TypeStdio,
		Command: os.Args[0],
		// A race-enabled binary sleeps a second before exiting, unless told not to.
		Env: map[string]string{"TOOLSIFT_TEST_UPSTREAM": "1", "GORACE": "atexit_sleep_ms=0"},
	}
}

// children returns the PIDs of this process's child processes, zombies included.
func children(t *testing.T) []int {
	t.Helper()
	var out []int
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc on this system")
	}
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(pid); ppid == me {
			out = append(out, pid)
		}
	}
	return out
}

// procStat returns a process's parent PID and state letter; zero and "" if it is gone.
func procStat(pid int) (ppid int, state string) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, ""
	}
	// The command name, in parentheses, may hold spaces: the fields start after the last ")".
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	ppid, _ = strconv.Atoi(fields[1])
	return ppid, fields[0]
}

// gone reports whether pid no longer runs: absent, or a zombie (its parent died and this
// container's PID 1 may not reap).
func gone(pid int) bool {
	_, state := procStat(pid)
	return state == "" || state == "Z"
}

func settleGoroutines(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d as before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func text(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string }
		IsError bool
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("result %s", res)
	}
	return r.Content[0].Text
}

// TestCrashRestartFiftyTimes crashes a real stdio server 50 times. Every crash is an error
// naming the server and its exit status, the next call waits for the restart and succeeds,
// and afterwards no process, zombie or goroutine is left behind.
func TestCrashRestartFiftyTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 51 processes")
	}
	baseline := runtime.NumGoroutine()
	if n := len(children(t)); n != 0 {
		t.Fatalf("%d child processes before the test", n)
	}
	pool := NewPool([]config.Server{testServer("s")}, Options{RetryMin: time.Millisecond, RetryMax: 10 * time.Millisecond})
	defer pool.Close()
	pool.Start(Hooks{})
	ctx := context.Background()
	waitFor(t, "first connection", func() bool { return len(pool.Catalog().Tools) == 3 })
	for i := range 50 {
		_, err := pool.Call(ctx, "s__crash", nil, nil, nil)
		if err == nil || !strings.Contains(err.Error(), `upstream "s": calling crash:`) || !strings.Contains(err.Error(), "exit status 4") {
			t.Fatalf("crash %d: error = %v, want one naming the server and the exit status", i, err)
		}
		res, err := pool.Call(ctx, "s__echo", nil, nil, nil)
		if err != nil {
			t.Fatalf("call after crash %d: %v", i, err)
		}
		if got := text(t, res); got != "echo" {
			t.Fatalf("call after crash %d = %q", i, got)
		}
		if kids := children(t); len(kids) != 1 {
			t.Fatalf("after crash %d: %d child processes (%v), want 1: crashed servers are not reaped", i, len(kids), kids)
		}
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if kids := children(t); len(kids) != 0 {
		t.Errorf("after Close: child processes %v", kids)
	}
	settleGoroutines(t, baseline)
}

// TestGrandchildrenStopWithTheServer: what a server starts (npx starts node) is stopped with
// it, whether the server crashes or is closed.
func TestGrandchildrenStopWithTheServer(t *testing.T) {
	pool := NewPool([]config.Server{testServer("s")}, Options{RetryMin: time.Millisecond})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 3 })
	ctx := context.Background()
	spawn := func() int {
		res, err := pool.Call(ctx, "s__spawn", nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(text(t, res))
		if gone(pid) {
			t.Fatalf("grandchild %d is not running", pid)
		}
		return pid
	}
	pid := spawn()
	if _, err := pool.Call(ctx, "s__crash", nil, nil, nil); err == nil {
		t.Fatal("crash: no error")
	}
	waitFor(t, fmt.Sprintf("grandchild %d to stop after the server crashed", pid), func() bool { return gone(pid) })
	pid = spawn()
	pool.Close()
	// SIGKILL has been sent by the time Close returns; the kernel finishes it off.
	waitFor(t, fmt.Sprintf("grandchild %d to stop after Close", pid), func() bool { return gone(pid) })
}

// TestLazyStartAndIdleStop: with a cached catalog a lazy server is not started until
// called; unused for its idleTimeout it is stopped, and the next call starts it again.
func TestLazyStartAndIdleStop(t *testing.T) {
	cache := t.TempDir()
	srv := testServer("s")
	warm := NewPool([]config.Server{srv}, Options{CacheDir: cache})
	warm.Start(Hooks{})
	waitFor(t, "first listing", func() bool { return len(warm.Catalog().Tools) == 3 })
	warm.Close()
	if kids := children(t); len(kids) != 0 {
		t.Fatalf("child processes %v after Close", kids)
	}

	srv.LazyStart, srv.IdleTimeout = true, 200*time.Millisecond
	pool := NewPool([]config.Server{srv}, Options{CacheDir: cache})
	defer pool.Close()
	pool.Start(Hooks{})
	if n := len(pool.Catalog().Tools); n != 3 {
		t.Fatalf("lazy pool lists %d tools, want the 3 cached", n)
	}
	if st := pool.Statuses()[0].State; st != StateIdle {
		t.Errorf("state = %s, want idle", st)
	}
	time.Sleep(50 * time.Millisecond) // long enough for an eager start to show
	if kids := children(t); len(kids) != 0 {
		t.Fatalf("lazy server started before any call: %v", kids)
	}
	for round := range 2 {
		res, err := pool.Call(context.Background(), "s__echo", nil, nil, nil)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if text(t, res) != "echo" {
			t.Fatalf("round %d: %s", round, res)
		}
		if kids := children(t); len(kids) != 1 {
			t.Fatalf("round %d: %d children after a call, want 1", round, len(kids))
		}
		waitFor(t, "idle stop", func() bool { return len(children(t)) == 0 && pool.Statuses()[0].State == StateIdle })
	}
}

// TestStdinWriterAfterClose: once a server's input is closed, an answer to one of its
// requests is dropped quietly (nobody will read it), while a request or notification still
// fails, so that nobody waits for its answer.
func TestStdinWriterAfterClose(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	sw := &stdinWriter{proc: &process{stdin: w}, timeout: time.Second}
	for _, tc := range []struct {
		msg     string
		wantErr bool
	}{
		{`{"jsonrpc":"2.0","id":3,"result":{"roots":[]}}` + "\n", false},
		{`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}` + "\n", false},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{}}` + "\n", true},
		{`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}` + "\n", true},
	} {
		n, err := sw.Write([]byte(tc.msg))
		if (err != nil) != tc.wantErr || err == nil && n != len(tc.msg) {
			t.Errorf("Write(%s) = %d, %v; want an error: %v", tc.msg, n, err, tc.wantErr)
		}
	}
}
