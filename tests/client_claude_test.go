package tests

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// claudeServer is the key toolsift is registered under in the --mcp-config file. Claude Code
// names an MCP tool mcp__<key>__<tool> for the model.
const claudeServer = "toolsift"

// claudeName is Claude Code's name for toolsift's tool t.
func claudeName(t string) string { return "mcp__" + claudeServer + "__" + t }

// Ids of the scripted model's tool_use blocks. The fake model recognises each step by the
// tool results a request carries, not by the request's position, so side requests and
// retries cannot shift the script.
const (
	claudeSearchID   = "toolu_e2e_search"
	claudeDirectID   = "toolu_e2e_direct"
	claudeCallToolID = "toolu_e2e_call_tool"
)

// What the fake model asks the unlocked tool to echo, called directly and through call_tool.
const (
	claudeDirectMessage   = "hello-direct"
	claudeCallToolMessage = "hello-from-model"
)

const claudePrompt = "Find the fx echo tool with tool_search, call it directly, then call it through call_tool."

// TestClaudeCodeUnlockedToolInNextRequest runs the real, pinned Claude Code headless
// (claude -p) and offline against a scripted fake Anthropic Messages API, with toolsift (on a
// warm catalog cache) over stdio as its only MCP server. It proves, on what the client
// actually sends:
//   - toolsift's tool_search and call_tool are declared in full from the first request, not
//     deferred behind Claude Code's own ToolSearch (toolsift marks them
//     _meta["anthropic/alwaysLoad"]);
//   - the tool that tool_search unlocks is loaded for the model in the very request that
//     carries the tool_search result: toolsift held the result until Claude Code had
//     re-listed;
//   - the model can call the unlocked tool by Claude Code's name for it, and call_tool
//     reaches it too; both results are the fixture's echo;
//   - toolsift recognised Claude Code (client=claude-code), the search ended its hold with
//     hold=relisted, and no list_changed was sent before the first search, though the fake
//     model answers only after toolsift has connected its (cached) upstream.
func TestClaudeCodeUnlockedToolInNextRequest(t *testing.T) {
	claude := claudeCLI(t)

	// The toolsift Claude Code starts must find the catalog already cached.
	cfg, cache := warmToolsift(t)

	home, work := t.TempDir(), t.TempDir()
	logPath := filepath.Join(t.ArtifactDir(), "toolsift.log")
	mcpConfig := writeClaudeMCPConfig(t, t.TempDir(), map[string]any{
		"type":    "stdio",
		"command": bin,
		"args":    toolsiftArgs(cfg, logPath),
		"env":     toolsiftEnv(cache),
	})

	model := newClaudeModel(t, logPath)
	run := runClaude(t, claude, home, work, mcpConfig, model)
	if run.err != nil {
		t.Fatalf("claude -p: %v", run.err)
	}
	t.Logf("model requests:\n%s", model.summary())

	// An MCP tool without _meta["anthropic/alwaysLoad"] is only named to the model, behind
	// Claude Code's ToolSearch (it did so with the fixture as its server); toolsift's own
	// tools must be there in full from the start.
	if req := model.opening(); req == nil {
		t.Error("no model request carried the prompt with tools declared")
	} else {
		for _, name := range []string{claudeName("tool_search"), claudeName("call_tool")} {
			if tool, ok := req.tools[name]; !ok || tool.DeferLoading {
				t.Errorf("request %d, the conversation's first, does not declare %s in full (declared: %v, deferred: %v)",
					req.n, name, ok, tool.DeferLoading)
			}
		}
	}

	// The unlocked tool is in the very next model request, and loaded: Claude Code declares a
	// tool that joins mid-conversation deferred and loads it with a tool_reference in that
	// request (see claudeRequest). Deferred with no reference, the model could not call it
	// until it had found it again with Claude Code's own ToolSearch.
	echo := claudeName("fx__echo")
	if req := model.answering(claudeSearchID); req == nil {
		t.Error("no model request carried the tool_search result")
	} else if !req.loads(echo) {
		t.Errorf("request %d, which carries the tool_search result, does not load %s (declared: %v, deferred: %v, referenced: %v)",
			req.n, echo, req.tools[echo].Name != "", req.tools[echo].DeferLoading, req.referenced[echo])
	}

	// Both calls reached the fixture and its echo reached the model.
	for _, c := range []struct{ id, how, message string }{
		{claudeDirectID, "the direct call of " + echo, claudeDirectMessage},
		{claudeCallToolID, "call_tool", claudeCallToolMessage},
	} {
		res, ok := model.result(c.id)
		switch {
		case !ok:
			t.Errorf("no model request carried the result of %s", c.how)
		case res.isError || !strings.Contains(res.text, `"tool":"echo"`) ||
			!strings.Contains(res.text, `"message":"`+c.message+`"`):
			t.Errorf("the result of %s sent to the model is not the fixture's echo of %q (is_error=%v): %s",
				c.how, c.message, res.isError, res.text)
		}
	}
	if n := logCount(run.log, `msg="tool call"`, "tool=fx__echo", "upstream=fx", "is_error=false"); n != 2 {
		t.Errorf("toolsift logged %d successful calls of fx__echo, want 2 (directly, then through call_tool)", n)
	}
	checkToolsiftLog(t, run.log, "claude-code", true)
}

// claudeCLI returns the pinned Claude Code.
func claudeCLI(t *testing.T) string {
	t.Helper()
	return clientBin(t, "claude", claudeEnv(t.TempDir(), "http://127.0.0.1:9"))
}

// claudeEnv is Claude Code's whole environment, with home as HOME and baseURL as its model
// API. Not os.Environ(): a developer's own Anthropic, Bedrock or Vertex variables would change
// where requests go. The last three keep it to loopback: no telemetry, error reports, update
// checks or other traffic that is not the conversation. With them, an strace of Claude Code
// 2.1.328 shows a single connect(), to the fake API on 127.0.0.1, and the test passes in a
// network namespace with only loopback (unshare -n).
func claudeEnv(home, baseURL string) []string {
	return []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TERM=dumb",
		"NO_COLOR=1",
		"ANTHROPIC_API_KEY=e2e-fake-key",
		"ANTHROPIC_BASE_URL=" + baseURL,
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}

// writeClaudeMCPConfig writes an --mcp-config file with server as the only MCP server and
// returns its path.
func writeClaudeMCPConfig(t *testing.T, dir string, server map[string]any) string {
	t.Helper()
	p := filepath.Join(dir, "mcp.json")
	writeJSON(t, p, map[string]any{"mcpServers": map[string]any{claudeServer: server}})
	return p
}

// runClaude runs `claude -p` once on the prompt, with home as its home directory, work as its
// folder, model as its model API and mcpConfig as its only MCP configuration.
func runClaude(t *testing.T, claude, home, work, mcpConfig string, model *claudeModel) clientRun {
	t.Helper()
	cmd := exec.Command(claude, "-p", claudePrompt,
		"--mcp-config", mcpConfig, "--strict-mcp-config",
		// Every toolsift tool is allowed; -p denies what would need a prompt. (Not
		// --dangerously-skip-permissions: Claude Code refuses it to root, which CI may be.)
		"--allowedTools", "mcp__"+claudeServer,
		"--no-session-persistence",
		// The transcript, tool results included, for a failure's report, and Claude Code's
		// own log (MCP connection, tool loading) in the artifact directory.
		"--output-format", "stream-json", "--verbose",
		"--debug-file", filepath.Join(t.ArtifactDir(), "claude-debug.log"))
	cmd.Env = claudeEnv(home, model.URL)
	cmd.Dir = work // a folder with no CLAUDE.md, .mcp.json, settings or git repository
	// Stdin stays /dev/null: -p reads piped input into the prompt, and would wait for it.
	run := runClient(t, cmd, model.logPath, model.summary)
	_ = os.WriteFile(filepath.Join(t.ArtifactDir(), "claude-stdout.jsonl"), []byte(run.stdout), 0o644)
	return run
}

// claudeModel is a fake Anthropic Messages API that plays a model using toolsift's tools. It
// records every request, and saves each body in the test's artifact directory (kept with
// go test -artifacts).
type claudeModel struct {
	*httptest.Server
	t       *testing.T
	logPath string // toolsift's log, to wait for its upstream before the first search
	started time.Time

	mu   sync.Mutex
	reqs []*claudeRequest
}

func newClaudeModel(t *testing.T, logPath string) *claudeModel {
	m := &claudeModel{t: t, logPath: logPath, started: time.Now()}
	m.Server = httptest.NewServer(m) // listens on 127.0.0.1
	t.Cleanup(m.Close)
	return m
}

// claudeRequest is one request to the fake API as the fake model understood it.
type claudeRequest struct {
	n      int           // 1-based, in arrival order
	at     time.Duration // since the fake started
	path   string
	model  string
	stream bool
	tools  map[string]claudeTool
	// results are the tool results the conversation carries, by tool_use id; last holds the
	// ids of those in its last user message, what the model is being asked to go on from.
	results map[string]claudeResult
	last    []string
	// referenced are the tools the conversation names in tool_reference blocks: a deferred
	// tool so referenced is loaded for the model. Claude Code declares a tool that joins
	// mid-conversation with defer_loading, keeping the declared tools (and so the prompt
	// cache) as they were, and loads it with a system message holding a tool_addition block.
	referenced map[string]bool
	prompt     bool   // the conversation carries the test's prompt
	answer     string // what the fake model did, for the summary
}

// claudeTool is a tool as a request declares it.
type claudeTool struct {
	Name         string `json:"name"`
	DeferLoading bool   `json:"defer_loading"`
}

// claudeResult is a tool_result block.
type claudeResult struct {
	text    string
	isError bool
}

// claudeMessagesBody is the part of a Messages API request the fake model reads.
type claudeMessagesBody struct {
	Model    string       `json:"model"`
	Stream   bool         `json:"stream"`
	Tools    []claudeTool `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"` // a string or content blocks
	} `json:"messages"`
}

// claudeBlock is a content block; content is a tool_result's content: a string or blocks.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeBlocks reads a message's or a tool result's content: a string is one text block.
func claudeBlocks(raw json.RawMessage) []claudeBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []claudeBlock{{Type: "text", Text: s}}
	}
	var blocks []claudeBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks
}

// parseClaudeRequest reads the tools a request to path declares, and the prompt, tool results
// and tool references its conversation carries.
func parseClaudeRequest(path string, body []byte) (*claudeRequest, error) {
	var b claudeMessagesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, err
	}
	req := &claudeRequest{path: path, model: b.Model, stream: b.Stream,
		tools: map[string]claudeTool{}, results: map[string]claudeResult{}, referenced: map[string]bool{}}
	for _, tool := range b.Tools {
		req.tools[tool.Name] = tool
	}
	lastUser := -1
	for i, msg := range b.Messages {
		var content any
		_ = json.Unmarshal(msg.Content, &content)
		claudeReferences(content, req.referenced)
		if msg.Role == "user" {
			lastUser = i
		}
	}
	// Claude Code may end a request with a system message (the tools that just joined) after
	// the user message that carries the tool results.
	for i, msg := range b.Messages {
		if msg.Role != "user" {
			continue
		}
		for _, block := range claudeBlocks(msg.Content) {
			switch block.Type {
			case "text":
				if strings.Contains(block.Text, claudePrompt) {
					req.prompt = true
				}
			case "tool_result":
				var text strings.Builder
				for _, c := range claudeBlocks(block.Content) {
					text.WriteString(c.Text)
				}
				req.results[block.ToolUseID] = claudeResult{text: text.String(), isError: block.IsError}
				if i == lastUser {
					req.last = append(req.last, block.ToolUseID)
				}
			}
		}
	}
	return req, nil
}

// claudeReferences adds to names the tools named by the tool_reference blocks anywhere in v,
// a decoded JSON value: inside a tool_result's content, or a tool_addition's tool.
func claudeReferences(v any, names map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if name, ok := v["name"].(string); ok && v["type"] == "tool_reference" {
			names[name] = true
		}
		for _, child := range v {
			claudeReferences(child, names)
		}
	case []any:
		for _, child := range v {
			claudeReferences(child, names)
		}
	}
}

// loads reports whether the request puts the tool in front of the model: declares it, and
// either does not defer it or loads it with a tool_reference.
func (r *claudeRequest) loads(name string) bool {
	tool, ok := r.tools[name]
	return ok && (!tool.DeferLoading || r.referenced[name])
}

// toolNames returns the names of the tools the request declares, sorted.
func (r *claudeRequest) toolNames() []string {
	var out []string
	for name := range r.tools {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (m *claudeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		// Claude Code 2.1.328 with an API key and non-essential traffic off asks for nothing
		// else; a 404 lets anything else fall back on its defaults.
		m.t.Logf("fake model: %s %s answered 404", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	req, err := parseClaudeRequest(r.URL.Path, body)
	if err != nil {
		m.t.Errorf("fake model: request body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.at = time.Since(m.started)
	m.mu.Lock()
	req.n = len(m.reqs) + 1
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	_ = os.WriteFile(filepath.Join(m.t.ArtifactDir(), fmt.Sprintf("request-%02d.json", req.n)), body, 0o644)

	if r.URL.Path == "/v1/messages/count_tokens" {
		m.mu.Lock()
		req.answer = "token count"
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"input_tokens":100}`)
		return
	}
	reply := m.answer(req)
	// Under the lock, which summary takes too: the race detector sees no order in "Claude
	// Code read the reply, then exited".
	m.mu.Lock()
	req.answer = reply.answer
	m.mu.Unlock()
	msg := map[string]any{"id": fmt.Sprintf("msg_e2e_%d", req.n), "type": "message", "role": "assistant",
		"model": req.model, "content": reply.blocks, "stop_reason": reply.stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 10}}
	if !req.stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	writeClaudeStream(w, msg, reply.blocks, reply.stop)
}

// writeClaudeStream writes msg as a Messages API event stream: the message with no content,
// then each block whole in one delta, then the stop reason.
func writeClaudeStream(w http.ResponseWriter, msg map[string]any, blocks []map[string]any, stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(event map[string]any) {
		data, _ := json.Marshal(event)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event["type"], data)
	}
	start := map[string]any{}
	for k, v := range msg {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	send(map[string]any{"type": "message_start", "message": start})
	for i, block := range blocks {
		var first, delta map[string]any
		switch block["type"] {
		case "tool_use":
			input, _ := json.Marshal(block["input"])
			first = map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}
			delta = map[string]any{"type": "input_json_delta", "partial_json": string(input)}
		default:
			first = map[string]any{"type": "text", "text": ""}
			delta = map[string]any{"type": "text_delta", "text": block["text"]}
		}
		send(map[string]any{"type": "content_block_start", "index": i, "content_block": first})
		send(map[string]any{"type": "content_block_delta", "index": i, "delta": delta})
		send(map[string]any{"type": "content_block_stop", "index": i})
	}
	send(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	send(map[string]any{"type": "message_stop"})
}

// claudeReply is the fake model's reply: the content blocks, the stop reason, and a word on
// what it did for the summary.
type claudeReply struct {
	answer string
	blocks []map[string]any
	stop   string
}

// answer is the model's reply to a request: the script's next step, found from the tool
// results the request carries, latest step first.
func (m *claudeModel) answer(req *claudeRequest) claudeReply {
	has := func(id string) bool { _, ok := req.results[id]; return ok }
	text := func(answer, s string) claudeReply {
		return claudeReply{answer, []map[string]any{{"type": "text", "text": s}}, "end_turn"}
	}
	call := func(id, name string, input any) claudeReply {
		return claudeReply{"call " + name, []map[string]any{{"type": "tool_use", "id": id, "name": name, "input": input}}, "tool_use"}
	}
	_, searchable := req.tools[claudeName("tool_search")]
	switch {
	case !searchable || !req.prompt:
		// A side request (a title, a quota check) does not declare toolsift's tools or does
		// not carry the conversation. Nor does the turn's request when toolsift failed to
		// start; the checks report that. (None came with non-essential traffic off.)
		return text("side request", "ok")
	case has(claudeCallToolID):
		return text("final text", "The echo tool answered both times.")
	case has(claudeDirectID):
		return call(claudeCallToolID, claudeName("call_tool"),
			map[string]any{"name": "fx__echo", "arguments": map[string]any{"message": claudeCallToolMessage}})
	case has(claudeSearchID):
		// Called whether or not the request declares it: if Claude Code did not re-list, its
		// answer to the call shows what the model would meet.
		return call(claudeDirectID, claudeName("fx__echo"), map[string]any{"message": claudeDirectMessage})
	default:
		if m.logPath != "" {
			awaitUpstream(m.t, m.logPath)
		}
		return call(claudeSearchID, claudeName("tool_search"), map[string]any{"query": "select:fx__echo"})
	}
}

func (m *claudeModel) all() []*claudeRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// opening returns the first request of the conversation: it carries the prompt and no tool
// results, and declares tools, which side requests do not.
func (m *claudeModel) opening() *claudeRequest {
	for _, req := range m.all() {
		if req.prompt && len(req.results) == 0 && len(req.tools) > 0 {
			return req
		}
	}
	return nil
}

// answering returns the first request whose last message carries the result of the tool_use
// id: the request that asks the model to go on from it.
func (m *claudeModel) answering(id string) *claudeRequest {
	for _, req := range m.all() {
		if slices.Contains(req.last, id) {
			return req
		}
	}
	return nil
}

// result returns the result of the tool_use id as the model was given it.
func (m *claudeModel) result(id string) (claudeResult, bool) {
	if req := m.answering(id); req != nil {
		return req.results[id], true
	}
	return claudeResult{}, false
}

// summary lists the requests received: when, path and model, the answer given, the MCP tools
// declared (deferred ones marked) and the results the last message carried.
func (m *claudeModel) summary() string {
	var b strings.Builder
	for _, req := range m.all() {
		var mcpTools []string
		for _, name := range req.toolNames() {
			if strings.HasPrefix(name, "mcp__") {
				switch {
				case req.tools[name].DeferLoading && req.referenced[name]:
					name += " (deferred, referenced)"
				case req.tools[name].DeferLoading:
					name += " (deferred)"
				}
				mcpTools = append(mcpTools, name)
			}
		}
		fmt.Fprintf(&b, "%d. +%v %s model=%s stream=%v -> %s; declares %q and %d other tools",
			req.n, req.at.Round(time.Millisecond), req.path, req.model, req.stream, req.answer,
			mcpTools, len(req.tools)-len(mcpTools))
		for _, id := range req.last {
			fmt.Fprintf(&b, "; carries the result of %s: %.300s", id, req.results[id].text)
		}
		b.WriteString("\n")
	}
	return b.String()
}
