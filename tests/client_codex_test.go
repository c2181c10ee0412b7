package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
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
	// The Codex run's toolsift gets this cache, so its catalog comes from the cache and the
	// log can show whether toolsift sends list_changed although nothing changed.
	cfg, cache := warmToolsift(t)

	t.Run("default", func(t *testing.T) {
		run := runCodexScenario(t, codex, cfg, cache, false)
		run.checkCallToolResult(t)
		checkToolsiftLog(t, run.log, "codex-mcp-client", false)

		// Codex does not re-list by default, which is why toolsift must not hold for it.
		if req := run.model.carrying(codexSearchCall); req == nil {
			t.Error("no model request carried the tool_search result")
		} else if _, ok := req.tools[codexToolName("fx__echo")]; ok {
			t.Errorf("request %d declared %s without mcp_tool_list_changed: Codex re-lists by default now, so its habit in proxy/clients.go is out of date",
				req.n, codexToolName("fx__echo"))
		}
	})

	t.Run("list_changed flag", func(t *testing.T) {
		run := runCodexScenario(t, codex, cfg, cache, true, "--enable", "mcp_tool_list_changed")
		run.checkCallToolResult(t)
		checkToolsiftLog(t, run.log, "codex-mcp-client", false)

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
		if n := logCount(run.log, `msg="tool call"`, "tool=fx__echo", "upstream=fx", "is_error=false"); n != 2 {
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
	clientRun
	model *codexModel
}

// runCodexScenario runs `codex exec` once on the scripted model with toolsift (on cfg, with
// the catalog cache in cache) as its only MCP server. direct makes the model also call the
// unlocked tool by name after calling it through call_tool.
func runCodexScenario(t *testing.T, codex, cfg, cache string, direct bool, flags ...string) codexRun {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	logPath := filepath.Join(t.ArtifactDir(), "toolsift.log")

	model := &codexModel{t: t, logPath: logPath, direct: direct}
	srv := httptest.NewServer(model) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	writeCodexConfig(t, filepath.Join(home, ".codex", "config.toml"), srv.URL, cfg, cache, logPath)

	args := append([]string{"exec", "--strict-config", "--ephemeral", "--skip-git-repo-check", "--color", "never",
		"--dangerously-bypass-approvals-and-sandbox", "-C", work}, flags...)
	// The npm launcher runs the native binary, which runs toolsift: runClient's process group
	// holds them all.
	cmd := exec.Command(codex, append(args, codexPrompt)...)
	cmd.Env = codexEnv(home)
	cmd.Dir = work
	// Stdin stays /dev/null: exec appends piped input to the prompt, and would wait for it.
	run := codexRun{runClient(t, cmd, logPath, model.summary), model}
	if run.err != nil {
		t.Fatalf("codex exec: %v", run.err)
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
	var args, env []string
	for _, a := range toolsiftArgs(cfg, logPath) {
		args = append(args, q(a))
	}
	vars := toolsiftEnv(cache)
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, k+" = "+q(vars[k]))
	}
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
args = [%s]
env = { %s }
# The race-enabled toolsift on a busy machine can take longer than the default.
startup_timeout_sec = 30
`, q(baseURL+"/v1"), codexServer, q(bin), strings.Join(args, ", "), strings.Join(env, ", "))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
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
		awaitUpstream(m.t, m.logPath)
		return call(codexSearchCall, codexToolName("tool_search"), map[string]any{"query": "select:fx__echo"})
	default:
		return codexMessage(req.n, "ok")
	}
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
	if logCount(r.log, `msg="tool call"`, "tool=fx__echo", "upstream=fx", "is_error=false") == 0 {
		t.Error(`toolsift logged no successful "tool call" of fx__echo`)
	}
}
