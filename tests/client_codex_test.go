package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// codexServer is the key toolsift is registered under in Codex's config.toml. Codex declares
// an MCP server's tools in a Responses API namespace named mcp__<key>.
const codexServer = "ts"

// Call ids of the scripted model's function calls. The fake model recognises each step by the
// outputs a request carries, not by the request's position, so side requests (titles,
// summaries) and retries cannot shift the script.
const (
	codexSearchCall   = "call_search"
	codexCallToolCall = "call_via_call_tool"
	codexDirectCall   = "call_direct"
)

const codexPrompt = "Echo hello-from-model through the fx echo tool."

// TestCodex runs the real Codex CLI headless and offline against a scripted Responses API,
// with toolsift over stdio as its only MCP server and the fixture (as fx) behind it. It
// proves that for Codex toolsift never holds a tool_search result (Codex would not re-list
// while it waits: hold=skipped, no wasted time), that call_tool reaches an unlocked tool at
// once whatever the client does with list_changed, and that with Codex's
// mcp_tool_list_changed feature the unlocked tool is declared to the model (under Codex's
// name for it) in the request that carries the search result, and calling it by that name
// works.
func TestCodex(t *testing.T) {
	codex := codexCLI(t)
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf("mcpServers:\n  fx:\n    command: %q\n", fixtureBin))
	// The Codex run's toolsift gets this cache, so its catalog comes from the cache and the
	// log can show whether toolsift sends list_changed although nothing changed.
	warmCache(t, env, bin, cfg, "select:fx__echo")
	cache := codexEnvValue(env, "XDG_CACHE_HOME")

	t.Run("default", func(t *testing.T) {
		run := runCodexScenario(t, codex, cfg, cache, false)
		run.checkCallToolResult(t)
		run.checkNoHold(t)

		// Codex does not re-list by default, which is why toolsift must not hold for it.
		if req := run.model.carrying(codexSearchCall); req == nil {
			t.Error("no model request carried the tool_search result")
		} else if _, ok := req.tools[codexToolName("fx__echo")]; ok {
			t.Errorf("request %d declared %s without mcp_tool_list_changed: Codex re-lists by default now, so its habit in proxy/clients.go is out of date",
				req.n, codexToolName("fx__echo"))
		}

		// With the catalog cached, nothing changes when the upstream connects, so nothing
		// should make a client re-list before the model has searched. (The search's own
		// list_changed, reason=search, is logged just before its "tool search" line.)
		search := codexLogIndex(run.log, `msg="tool search"`)
		for _, line := range run.log[:max(search, 0)] {
			if strings.Contains(line, `msg="list_changed sent"`) && !strings.Contains(line, "reason=search") {
				t.Errorf("list_changed sent before the first tool_search although the catalog was cached:\n%s", line)
			}
		}
	})

	t.Run("list_changed flag", func(t *testing.T) {
		run := runCodexScenario(t, codex, cfg, cache, true, "--enable", "mcp_tool_list_changed")
		run.checkCallToolResult(t)
		run.checkNoHold(t)

		name := codexToolName("fx__echo")
		first := 0
		for _, req := range run.model.all() {
			if _, ok := req.tools[name]; ok {
				first = req.n
				break
			}
		}
		t.Logf("%s first declared in model request %d", name, first)
		if req := run.model.carrying(codexSearchCall); req == nil {
			t.Error("no model request carried the tool_search result")
		} else if _, ok := req.tools[name]; !ok {
			t.Errorf("request %d, which carries the tool_search result, does not declare %s (first declared in request %d)", req.n, name, first)
		}

		out, ok := run.model.output(codexDirectCall)
		if !ok {
			t.Fatalf("the model's direct call of %s got no result", name)
		}
		if !strings.Contains(out, `"message":"hello-direct"`) || !strings.Contains(out, `"tool":"echo"`) {
			t.Errorf("direct call of %s returned to the model:\n%s", name, out)
		}
		if n := codexLogCount(run.log, `msg="tool call"`, "tool=fx__echo", "upstream=fx", "is_error=false"); n != 2 {
			t.Errorf("toolsift logged %d calls of fx__echo, want 2 (through call_tool, then directly)", n)
		}
	})
}

// codexCLI returns the pinned Codex CLI. Even --version writes under CODEX_HOME, so it gets
// one of its own.
func codexCLI(t *testing.T) string {
	t.Helper()
	return clientBin(t, "codex", codexEnv(t.TempDir()))
}

// codexEnv is Codex's whole environment, with home as HOME: only what it needs, so that
// nothing of the developer's own Codex or OpenAI setup leaks in.
func codexEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"),
		"OPENAI_API_KEY=dummy", "TERM=dumb"}
}

// codexRun is what one Codex run left behind.
type codexRun struct {
	model *codexModel
	log   []string // toolsift's log lines
}

// runCodexScenario runs `codex exec` once on the scripted model with toolsift (on cfg, with
// the catalog cache in cache) as its only MCP server. direct makes the model also call the
// unlocked tool by name after calling it through call_tool.
func runCodexScenario(t *testing.T, codex, cfg, cache string, direct bool, flags ...string) codexRun {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	work := filepath.Join(dir, "work")
	logPath := filepath.Join(dir, "toolsift.log")
	for _, d := range []string{filepath.Join(home, ".codex"), work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	model := &codexModel{t: t, logPath: logPath, direct: direct}
	srv := httptest.NewServer(model) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	writeCodexConfig(t, filepath.Join(home, ".codex", "config.toml"), srv.URL, cfg, cache, logPath)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	args := append([]string{"exec", "--strict-config", "--ephemeral", "--skip-git-repo-check", "--color", "never",
		"--dangerously-bypass-approvals-and-sandbox", "-C", work}, flags...)
	cmd := exec.CommandContext(ctx, codex, append(args, codexPrompt)...)
	cmd.Env = codexEnv(home)
	cmd.Dir = work
	// The npm launcher runs the native binary, which runs toolsift, which runs the fixture: a
	// timeout must take them all down, so they get a process group of their own.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	// Stdin stays /dev/null: exec appends piped input to the prompt, and would wait for it.
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	start := time.Now()
	err := cmd.Run()
	t.Logf("codex exec took %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("codex stdout:\n%s\ncodex stderr:\n%s\ntoolsift log:\n%s\nmodel requests:\n%s",
				stdout.String(), stderr.String(), log, model.summary())
		}
	})
	if ctx.Err() != nil {
		t.Fatalf("codex exec did not finish within 120s")
	}
	if err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	run := codexRun{model: model, log: readCodexLog(t, logPath)}
	for _, line := range run.log {
		if strings.Contains(line, "Error writing response") {
			t.Errorf("toolsift failed to write a response: %s", line)
		}
	}
	return run
}

// writeCodexConfig writes a config.toml that points Codex at the fake model and at toolsift,
// and switches off everything that would reach the network: with it, an strace of Codex
// 0.171 shows connections to loopback only (without it: api.github.com for the curated
// plugins, ab.chatgpt.com for metrics).
func writeCodexConfig(t *testing.T, path, baseURL, cfg, cache, logPath string) {
	t.Helper()
	q := strconv.Quote // a Go quoted string of plain paths is a TOML basic string
	toml := fmt.Sprintf(`model = "gpt-5"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = %s
wire_api = "responses"
env_key = "OPENAI_API_KEY"

[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
metrics_exporter = "none"
trace_exporter = "none"

[mcp_servers.%s]
command = %s
args = ["--config", %s, "--log-level", "debug", "--log-file", %s]
env = { XDG_CACHE_HOME = %s, GORACE = "atexit_sleep_ms=0" }
# The race-enabled toolsift on a busy machine can take longer than the default.
startup_timeout_sec = 30
`, q(baseURL+"/v1"), codexServer, q(bin), q(cfg), q(logPath), q(cache))
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codexToolName is the name Codex gives the model for an MCP tool of the toolsift server:
// the tool's name in the server's namespace, with hyphens turned to underscores (Codex
// 0.171 declares toolsift's f-x__echo as f_x__echo and maps a call of it back).
func codexToolName(tool string) string {
	return "mcp__" + codexServer + "__" + strings.ReplaceAll(tool, "-", "_")
}

// codexModel is a fake OpenAI Responses API that plays a model using toolsift's tools. It
// records every request.
type codexModel struct {
	t       *testing.T
	logPath string // toolsift's log, to wait for its upstream before the first search
	direct  bool   // after call_tool, also call the unlocked tool by name

	mu   sync.Mutex
	reqs []*codexRequest
}

// codexRequest is one POST /v1/responses as the fake model understood it.
type codexRequest struct {
	n       int                     // 1-based, in arrival order
	tools   map[string]codexToolRef // by the flat name mcp__ts__tool_search
	outputs map[string]string       // function call outputs by call id
	prompt  bool                    // carries the test's prompt
	body    []byte
}

// codexToolRef is how a function call must name a declared tool: Codex 0.171 declares MCP
// tools as functions inside a namespace (mcp__ts), and a call names both.
type codexToolRef struct{ namespace, name string }

// codexResponsesBody is the part of a Responses API request the fake model reads.
type codexResponsesBody struct {
	Input []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		CallID  string          `json:"call_id"`
		Output  json.RawMessage `json:"output"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"input"`
	Tools []codexResponsesTool `json:"tools"`
}

type codexResponsesTool struct {
	Type  string               `json:"type"`
	Name  string               `json:"name"`
	Tools []codexResponsesTool `json:"tools"` // of a namespace
}

// parseCodexRequest reads the tools a request declares and the outputs and prompt it carries.
func parseCodexRequest(body []byte) (*codexRequest, error) {
	var b codexResponsesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	req := &codexRequest{tools: map[string]codexToolRef{}, outputs: map[string]string{}, body: body}
	for _, tool := range b.Tools {
		if tool.Type == "namespace" {
			for _, fn := range tool.Tools {
				req.tools[tool.Name+"__"+fn.Name] = codexToolRef{tool.Name, fn.Name}
			}
		} else if tool.Name != "" {
			req.tools[tool.Name] = codexToolRef{name: tool.Name}
		}
	}
	for _, item := range b.Input {
		switch item.Type {
		case "function_call_output":
			// The output is a string, or content items when the result is not plain text.
			var s string
			if json.Unmarshal(item.Output, &s) != nil {
				s = string(item.Output)
			}
			req.outputs[item.CallID] = s
		case "message":
			for _, c := range item.Content {
				if item.Role == "user" && strings.Contains(c.Text, codexPrompt) {
					req.prompt = true
				}
			}
		}
	}
	return req, nil
}

// ServeHTTP answers a Responses API request with a stream of one output item. These three
// events are all Codex 0.171 needs of a response (no deltas, no output_item.added).
func (m *codexModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		// Codex 0.171 asks for nothing else here; a 404 would let it fall back on defaults.
		m.t.Logf("fake model: %s %s answered 404", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" {
		m.t.Errorf("fake model: request body is %s-encoded, which it cannot read", enc)
		http.Error(w, "encoded body", http.StatusUnsupportedMediaType)
		return
	}
	req, err := parseCodexRequest(body)
	if err != nil {
		m.t.Errorf("fake model: request body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	req.n = len(m.reqs) + 1
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()

	item := m.answer(req)
	id := fmt.Sprintf("resp_%d", req.n)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": id}},
		{"type": "response.output_item.done", "item": item},
		{"type": "response.completed", "response": map[string]any{"id": id,
			"usage": map[string]any{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}}},
	} {
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	}
}

// answer is the model's one output item for a request: the script's next step, found from
// the function call outputs the request carries.
func (m *codexModel) answer(req *codexRequest) map[string]any {
	has := func(id string) bool { _, ok := req.outputs[id]; return ok }
	call := func(id, name string, args any) map[string]any {
		ref, ok := req.tools[name]
		if !ok {
			m.t.Errorf("fake model: request %d does not declare %s", req.n, name)
			return codexMessage(req.n, "cannot go on: "+name+" is not declared")
		}
		return codexFunctionCall(id, ref, args)
	}
	switch {
	case req.tools[codexToolName("tool_search")] == (codexToolRef{}):
		// A side request (a title, a summary) declares no toolsift tools. So does the turn's
		// request when toolsift failed to start; the run's checks report that.
		return codexMessage(req.n, "ok")
	case has(codexDirectCall) || (has(codexCallToolCall) && !m.direct):
		return codexMessage(req.n, "done")
	case has(codexCallToolCall):
		return call(codexDirectCall, codexToolName("fx__echo"), map[string]any{"message": "hello-direct"})
	case has(codexSearchCall):
		return call(codexCallToolCall, codexToolName("call_tool"),
			map[string]any{"name": "fx__echo", "arguments": map[string]any{"message": "hello-from-model"}})
	case req.prompt:
		m.awaitUpstream()
		return call(codexSearchCall, codexToolName("tool_search"), map[string]any{"query": "select:fx__echo"})
	default:
		return codexMessage(req.n, "ok")
	}
}

// awaitUpstream holds the first answer until toolsift's upstream has connected, as a real
// model's seconds of latency would: otherwise the fake model would search before the
// upstream connects, and whatever toolsift does on connecting would never come before the
// search.
func (m *codexModel) awaitUpstream() {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(m.logPath)
		if bytes.Contains(data, []byte(`msg="upstream connected"`)) {
			// What toolsift does on connecting is logged right after; let it be.
			time.Sleep(250 * time.Millisecond)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.t.Errorf("fake model: toolsift's upstream did not connect within 30s")
}

func codexMessage(n int, text string) map[string]any {
	return map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%d", n),
		"content": []any{map[string]any{"type": "output_text", "text": text}}}
}

func codexFunctionCall(id string, ref codexToolRef, args any) map[string]any {
	a, _ := json.Marshal(args)
	item := map[string]any{"type": "function_call", "id": "fc_" + id, "call_id": id, "name": ref.name, "arguments": string(a)}
	if ref.namespace != "" {
		item["namespace"] = ref.namespace
	}
	return item
}

func (m *codexModel) all() []*codexRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*codexRequest(nil), m.reqs...)
}

// carrying returns the first request that carries the output of the call id.
func (m *codexModel) carrying(id string) *codexRequest {
	for _, req := range m.all() {
		if _, ok := req.outputs[id]; ok {
			return req
		}
	}
	return nil
}

// output returns what the model was given as the result of the call id.
func (m *codexModel) output(id string) (string, bool) {
	if req := m.carrying(id); req != nil {
		return req.outputs[id], true
	}
	return "", false
}

// summary describes each request by the toolsift tools it declares and the outputs it
// carries.
func (m *codexModel) summary() string {
	var b strings.Builder
	for _, req := range m.all() {
		var tools, outputs []string
		for name := range req.tools {
			if strings.HasPrefix(name, "mcp__") {
				tools = append(tools, name)
			}
		}
		for id := range req.outputs {
			outputs = append(outputs, id)
		}
		fmt.Fprintf(&b, "%d: prompt=%v mcp tools=%q outputs=%q (%d bytes)\n", req.n, req.prompt, tools, outputs, len(req.body))
	}
	return b.String()
}

// checkCallToolResult checks that call_tool reached the fixture's echo at once and that its
// result went back to the model.
func (r codexRun) checkCallToolResult(t *testing.T) {
	t.Helper()
	out, ok := r.model.output(codexCallToolCall)
	if !ok {
		t.Fatal("the model's call_tool call got no result")
	}
	if !strings.Contains(out, `"message":"hello-from-model"`) || !strings.Contains(out, `"tool":"echo"`) {
		t.Errorf("call_tool returned to the model:\n%s", out)
	}
	if codexLogIndex(r.log, `msg="tool call"`, "tool=fx__echo", "upstream=fx", "is_error=false") < 0 {
		t.Error(`toolsift logged no successful "tool call" of fx__echo`)
	}
}

// checkNoHold checks that toolsift knew the client for Codex and did not hold its search.
func (r codexRun) checkNoHold(t *testing.T) {
	t.Helper()
	if codexLogIndex(r.log, `msg="client connected"`, "client=codex-mcp-client", "holds=false") < 0 {
		t.Error(`toolsift did not log "client connected" with client=codex-mcp-client holds=false`)
	}
	i := codexLogIndex(r.log, `msg="tool search"`)
	if i < 0 {
		t.Fatal(`toolsift logged no "tool search"`)
	}
	if !strings.Contains(r.log[i], "hold=skipped") {
		t.Errorf("tool_search was not answered at once (want hold=skipped): %s", r.log[i])
	}
	if m := regexp.MustCompile(`duration_ms=(\d+)`).FindStringSubmatch(r.log[i]); m != nil {
		t.Logf("tool_search took %s ms in toolsift", m[1])
	}
}

func readCodexLog(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("toolsift's log: %v (did Codex start it?)", err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// codexLogIndex returns the index of the first log line containing all of subs, or -1.
func codexLogIndex(log []string, subs ...string) int {
	for i, line := range log {
		if codexHasAll(line, subs) {
			return i
		}
	}
	return -1
}

// codexLogCount counts the log lines containing all of subs.
func codexLogCount(log []string, subs ...string) int {
	n := 0
	for _, line := range log {
		if codexHasAll(line, subs) {
			n++
		}
	}
	return n
}

func codexHasAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// codexEnvValue returns the value exec would give key in env: the last one.
func codexEnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
