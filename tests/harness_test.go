// Package tests drives the built toolsift binary over stdio, as an MCP client would, against
// real upstream servers: the Go fixture in ./fixture and pinned npm servers in node_modules.
package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/mcptest"
)

var (
	bin        string // the toolsift binary
	fixtureBin string // the fixture server binary
	nodeBin    string // tests/node_modules/.bin
	catalogs   string // bench/catalogs
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolsift-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "toolsift")
	fixtureBin = filepath.Join(dir, "fixture")
	for _, b := range [][]string{{bin, ".."}, {fixtureBin, "./fixture"}} {
		out, err := exec.Command("go", "build", "-race", "-o", b[0], b[1]).CombinedOutput()
		if err != nil && strings.Contains(string(out), "-race") {
			out, err = exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b[1], err, out)
			os.Exit(1)
		}
	}
	wd, _ := os.Getwd()
	nodeBin = filepath.Join(wd, "node_modules", ".bin")
	catalogs = filepath.Join(wd, "..", "bench", "catalogs")
	code := m.Run()
	os.RemoveAll(dir)
	if plain.toolsift != "" {
		os.RemoveAll(filepath.Dir(plain.toolsift))
	}
	os.Exit(code)
}

// isolatedEnv is the environment for a process under test: its own cache directory, so
// that no test sees another's cached catalogs.
func isolatedEnv(t testing.TB) []string {
	// GORACE: the race-enabled binaries would otherwise sleep a second before exiting.
	// XDG_STATE_HOME: approvals and setup's records are the test's own too.
	// TOOLSIFT_TOKEN_STORE: sign-ins go to files in that state folder, never a desktop's keyring.
	return append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "TOOLSIFT_TOKEN_STORE=file", "GORACE=atexit_sleep_ms=0")
}

// npmServer returns the path of a pinned npm server's executable, failing the test (not
// skipping it) when `npm ci` has not been run in tests/.
func npmServer(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(nodeBin, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `npm ci` in tests/ (.ci/run does)", p)
	}
	return p
}

func catalog(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(catalogs, name+".json")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("catalog %s: %v", name, err)
	}
	return p
}

// message is any JSON-RPC message.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// client is a minimal MCP client over a child process's stdio. It records every line the
// child writes to stdout, so tests can check that all of it is JSON-RPC.
type client struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *mcptest.Buffer

	mu      sync.Mutex // guards the fields below
	nextID  int
	waiting map[string]chan message
	lines   []string
	notes   []message
	noteCh  chan struct{} // closed and replaced on each notification
	done    chan struct{} // closed when stdout ends
	// relist makes the client answer list_changed with tools/list, as Claude Code does.
	relist bool
}

// start runs a command as an MCP server and returns a client for it. The process is stopped
// when the test ends.
func start(t testing.TB, name string, args ...string) *client {
	t.Helper()
	return startWith(t, isolatedEnv(t), name, args...)
}

// startWith is start with the given environment.
func startWith(t testing.TB, env []string, name string, args ...string) *client {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{t: t, cmd: cmd, stdin: stdin, stderr: &mcptest.Buffer{},
		waiting: map[string]chan message{}, noteCh: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(stdout)
	t.Cleanup(func() {
		c.stdin.Close()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-waited
			t.Errorf("%s did not exit within 10s of stdin closing", name)
		}
		if t.Failed() {
			t.Logf("stderr of %s:\n%s", filepath.Base(name), c.Stderr())
		}
	})
	return c
}

func (c *client) Stderr() string { return c.stderr.String() }

func (c *client) read(r io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		c.mu.Lock()
		c.lines = append(c.lines, line)
		c.mu.Unlock()
		var m message
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			c.answer(m)
		case m.Method != "":
			c.mu.Lock()
			if c.relist && m.Method == "notifications/tools/list_changed" {
				go c.tryRequest("tools/list", nil, 30*time.Second)
			}
			c.notes = append(c.notes, m)
			close(c.noteCh)
			c.noteCh = make(chan struct{})
			c.mu.Unlock()
		default:
			c.mu.Lock()
			ch := c.waiting[string(m.ID)]
			delete(c.waiting, string(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
}

// answer replies to a server-to-client request.
func (c *client) answer(m message) {
	result := `{}`
	if m.Method == "roots/list" {
		result = `{"roots":[{"uri":"file:///toolsift-e2e-root","name":"e2e"}]}`
	}
	// The server may ask after the test closed its input; that is no failure of the test.
	io.WriteString(c.stdin, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result))
}

func (c *client) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatalf("writing to server: %v", err)
	}
}

// request sends a request and waits for its answer.
func (c *client) request(method string, params any) message {
	c.t.Helper()
	m, err := c.tryRequest(method, params, 30*time.Second)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	return m
}

func (c *client) tryRequest(method string, params any, timeout time.Duration) (message, error) {
	c.mu.Lock()
	c.nextID++
	id := fmt.Sprint(c.nextID)
	ch := make(chan message, 1)
	c.waiting[id] = ch
	c.mu.Unlock()
	p, err := json.Marshal(params)
	if err != nil {
		return message{}, err
	}
	if params == nil {
		p = []byte("{}")
	}
	// An error, not a failure: the re-list a late list_changed starts (see relist) may find
	// the input closed by a test that is done with the server.
	if _, err := io.WriteString(c.stdin, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", id, method, p)); err != nil {
		return message{}, fmt.Errorf("writing to server: %w", err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return m, fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
		}
		return m, nil
	case <-c.done:
		return message{}, fmt.Errorf("server closed stdout")
	case <-time.After(timeout):
		return message{}, fmt.Errorf("no answer within %v", timeout)
	}
}

func (c *client) initialize() {
	c.t.Helper()
	c.initializeWith(map[string]any{})
}

// initializeWith initializes declaring the given client capabilities.
func (c *client) initializeWith(caps map[string]any) {
	c.t.Helper()
	c.request("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": "toolsift-e2e", "version": "1"},
	})
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// Tool is a tool as listed, with its raw schema.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Meta        map[string]any  `json:"_meta"`
	Annotations map[string]any  `json:"annotations"`
}

func (c *client) listTools() []Tool {
	c.t.Helper()
	var all []Tool
	cursor := ""
	for {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		m := c.request("tools/list", params)
		var res struct {
			Tools      []Tool `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			c.t.Fatalf("tools/list result: %v", err)
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all
		}
		cursor = res.NextCursor
	}
}

func names(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// CallResult is a tools/call result.
type CallResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
	Meta              map[string]any  `json:"_meta"`
}

func (r CallResult) Text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// call calls a tool and returns the decoded result and the raw one.
func (c *client) call(name string, args any) (CallResult, json.RawMessage) {
	c.t.Helper()
	m := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	var res CallResult
	if err := json.Unmarshal(m.Result, &res); err != nil {
		c.t.Fatalf("tools/call %s result: %v", name, err)
	}
	return res, m.Result
}

// SearchResult mirrors proxy.SearchResult.
type SearchResult struct {
	Query   string `json:"query"`
	Matches []struct {
		Name        string          `json:"name"`
		Server      string          `json:"server"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	} `json:"matches"`
	Unlocked    []string `json:"unlocked"`
	Unknown     []string `json:"unknown"`
	Unavailable []string `json:"unavailable"`
	Hint        string   `json:"hint"`
}

func (c *client) search(query string, max int) SearchResult {
	c.t.Helper()
	args := map[string]any{"query": query}
	if max > 0 {
		args["max_results"] = max
	}
	res, _ := c.call("tool_search", args)
	if res.IsError {
		c.t.Fatalf("tool_search %q: isError: %s", query, res.Text())
	}
	var sr SearchResult
	if err := json.Unmarshal([]byte(res.Text()), &sr); err != nil {
		c.t.Fatalf("tool_search %q: text is not JSON: %v\n%s", query, err, res.Text())
	}
	var structured SearchResult
	if err := json.Unmarshal(res.StructuredContent, &structured); err != nil || structured.Query != query {
		c.t.Fatalf("tool_search %q: structuredContent does not match the text: %v", query, err)
	}
	return sr
}

// notifications counts the notifications of method received so far.
func (c *client) notifications(method string) int { return len(c.received(method)) }

// received returns the notifications of method received so far.
func (c *client) received(method string) []message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []message
	for _, m := range c.notes {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// waitNotification waits until at least n notifications of method have arrived.
func (c *client) waitNotification(method string, n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		ch := c.noteCh
		c.mu.Unlock()
		if c.notifications(method) >= n {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

// warmCache runs toolsift (the binary bin) once on cfg in env and searches for query, which
// waits for the servers' first start, so that their catalogs are cached for the next run.
// It returns the search result.
func warmCache(t testing.TB, env []string, bin, cfg, query string) SearchResult {
	t.Helper()
	c := startWith(t, env, bin, "--config", cfg)
	c.relist = true // or the search waits out its hold
	c.initialize()
	sr := c.search(query, 1)
	// A search waits for the servers only so long: more than a few starting in waves
	// (maxStarting) can still be starting, and uncached, when it answers.
	for deadline := time.Now().Add(time.Minute); strings.Contains(sr.Hint, "still starting") && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		sr = c.search(query, 1)
	}
	c.stdin.Close()
	<-c.done
	return sr
}

// config writes a configuration file and returns its path.
func config(t testing.TB, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolsift.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// proxy starts toolsift on a configuration and initializes a session. When the test ends it
// checks that every line toolsift wrote to stdout was a JSON-RPC message.
func proxy(t testing.TB, yaml string) *client {
	t.Helper()
	c := start(t, bin, "--config", config(t, yaml), "--log-level", "debug")
	t.Cleanup(func() { c.checkStdout() })
	c.initialize()
	return c
}

// checkStdout fails the test if any line on stdout is not a JSON-RPC 2.0 message.
func (c *client) checkStdout() {
	c.t.Helper()
	c.stdin.Close() // toolsift exits when its input ends
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		c.t.Error("stdout still open 15s after stdin closed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.lines) == 0 {
		c.t.Error("nothing on stdout")
	}
	for i, line := range c.lines {
		var m message
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.JSONRPC != "2.0" ||
			(m.Method == "" && len(m.ID) == 0 && m.Error == nil) {
			c.t.Errorf("stdout line %d is not JSON-RPC: %q", i+1, line)
		}
	}
}

// lineIndex returns the index of the first stdout line containing all of the substrings,
// or -1.
func (c *client) lineIndex(subs ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
next:
	for i, line := range c.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		return i
	}
	return -1
}

// waitTool polls tools/list until name is listed.
func (c *client) waitTool(name string) []Tool {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools := c.listTools()
		for _, t := range tools {
			if t.Name == name {
				return tools
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not listed within 30s; listed: %q", name, names(tools))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
