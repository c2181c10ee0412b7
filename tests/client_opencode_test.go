package tests

import (
	"bufio"
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

// What the scripted model and the assertions agree on. opencode declares an MCP tool to the
// model as <server>_<tool>, the server named as in its config.
const (
	ocServer     = "toolsift"
	ocSearchTool = ocServer + "_tool_search"
	ocCallTool   = ocServer + "_call_tool"
	ocEchoTool   = ocServer + "_fx__echo" // toolsift's fx__echo, once unlocked
	ocPrompt     = "Find the echo tool with toolsift and echo hello-from-model."
	ocMessage    = "hello-from-model"
	ocFinal      = "The echo tool answered."
	ocSearchID   = "call_search_1"
	ocEchoID     = "call_echo_1"
)

// TestOpencodeUnlockedToolInNextRequest runs the real opencode headless and offline against
// a scripted OpenAI-compatible model, with toolsift (over stdio, catalog cache warm) as its
// only MCP server. It proves that, with opencode:
//   - the tool a tool_search unlocks is declared in the very next model request: toolsift
//     knows opencode (client=opencode holds=true) and holds the search result until it has
//     re-listed (the log says hold=relisted);
//   - call_tool reaches the upstream and its answer comes back to the model;
//   - toolsift, starting from a warm cache, sends no list_changed before the first search,
//     which would make opencode re-list (and a real model's prompt cache miss) for nothing.
//
// The scripted model answers at once, so the search can land in the seconds after opencode
// logs "booting location services", during which it reads nothing from toolsift. If that
// outlasts toolsift's ListWait (1.5 s), the hold times out and the unlocked tool misses the
// next request: the test then fails, as a user's session would.
func TestOpencodeUnlockedToolInNextRequest(t *testing.T) {
	oc := clientBin(t, "opencode", []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")})

	// The client's toolsift must find the catalog cached, as it would after a first run.
	cfg, cache := warmToolsift(t)

	model := &opencodeModel{}
	api := httptest.NewServer(model) // 127.0.0.1 only
	defer api.Close()
	logFile := filepath.Join(t.ArtifactDir(), "toolsift.log")
	home := t.TempDir()
	// opencode's global configuration.
	writeJSON(t, filepath.Join(home, ".config", "opencode", "opencode.json"), map[string]any{
		"$schema":     "https://opencode.ai/config.json",
		"autoupdate":  false,
		"share":       "disabled",
		"model":       "fake/scripted",
		"small_model": "fake/scripted", // the session title is asked of it too
		"permission":  "allow",         // `opencode run` has no one to ask
		"provider": map[string]any{
			"fake": map[string]any{
				// Bundled in opencode 1.18.33: nothing is fetched from npm for it.
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "Scripted",
				"options": map[string]any{"baseURL": api.URL + "/v1", "apiKey": "dummy"},
				"models":  map[string]any{"scripted": map[string]any{"name": "Scripted", "tool_call": true}},
			},
		},
		"mcp": map[string]any{
			ocServer: map[string]any{
				"type":    "local",
				"command": append([]string{bin}, toolsiftArgs(cfg, logFile)...),
				// opencode's own XDG_CACHE_HOME is under its HOME; toolsift needs the warm one.
				"environment": toolsiftEnv(cache),
			},
		},
	})

	run := runOpencode(t, oc, home, logFile, model.summary)
	if run.err != nil {
		t.Errorf("opencode run: %v", run.err)
	}
	if !strings.Contains(run.stdout, ocFinal) {
		t.Errorf("opencode did not print the model's final answer %q", ocFinal)
	}

	// What the model saw.
	reqs := model.requests()
	first := slices.IndexFunc(reqs, func(r opencodeRequest) bool {
		return r.hasUser(ocPrompt) && slices.Contains(r.declared(), ocSearchTool)
	})
	afterSearch := slices.IndexFunc(reqs, func(r opencodeRequest) bool { return r.hasResult(ocSearchID) })
	afterEcho := slices.IndexFunc(reqs, func(r opencodeRequest) bool { return r.hasResult(ocEchoID) })
	if first < 0 {
		t.Fatalf("no model request carried the prompt and declared %s", ocSearchTool)
	}
	if d := reqs[first].declared(); slices.Contains(d, ocEchoTool) {
		t.Errorf("%s was declared before any search, so the test proves nothing: %q", ocEchoTool, d)
	}
	if afterSearch < 0 {
		t.Fatalf("no model request carried the result of %s", ocSearchTool)
	}
	if d := reqs[afterSearch].declared(); !slices.Contains(d, ocEchoTool) {
		t.Errorf("the request carrying the search result does not declare the unlocked %s: %q", ocEchoTool, d)
	}
	if afterEcho < 0 {
		t.Fatalf("no model request carried the result of %s", ocCallTool)
	}
	// The fixture's echo answers {"tool": …, "arguments": …}; call_tool passes it through.
	result, _ := reqs[afterEcho].toolResult(ocEchoID)
	var echoed struct {
		Tool      string `json:"tool"`
		Arguments struct {
			Message string `json:"message"`
		} `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(result), &echoed); err != nil || echoed.Tool != "echo" || echoed.Arguments.Message != ocMessage {
		t.Errorf("call_tool result the model got is not the fixture's echo of %q: %s", ocMessage, result)
	}

	// What toolsift did, by its log.
	if !slices.ContainsFunc(run.log, func(l string) bool { return logField(l, "msg") == "catalog from cache" }) {
		t.Errorf("toolsift did not start from the warm cache")
	}
	checkToolsiftLog(t, run.log, "opencode", true)
}

// runOpencode runs `opencode run` on the prompt, with home as its HOME and every XDG
// directory, in a fresh project directory; its toolsift logs to logFile, and requests
// describes what the fake model received, for a failure.
func runOpencode(t *testing.T, oc, home, logFile string, requests func() string) clientRun {
	t.Helper()
	cmd := exec.Command(oc, "run", "--print-logs", "--model", "fake/scripted", ocPrompt)
	cmd.Dir = t.TempDir()
	// Built from scratch, so that nothing of the caller's (API keys, npm settings, a
	// configured provider) reaches opencode.
	cmd.Env = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TERM=dumb",
		"LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		// opencode installs @opencode-ai/plugin into its config directory in the background,
		// with npm: offline, that fails at once instead of reaching for registry.npmjs.org.
		"npm_config_offline=true",
	}
	// --print-logs puts opencode's own log on its stderr, for a failure's report.
	return runClient(t, cmd, logFile, requests)
}

// opencodeRequest is one chat completions request, as far as the script reads it.
type opencodeRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"` // a string, or a list of parts
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`

	raw []byte // the body as sent
}

func opencodeText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// declared returns the names of the tools the request offers the model.
func (r opencodeRequest) declared() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// toolResult returns what the request tells the model tool call id returned.
func (r opencodeRequest) toolResult(id string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == id {
			return opencodeText(m.Content), true
		}
	}
	return "", false
}

func (r opencodeRequest) hasResult(id string) bool {
	_, ok := r.toolResult(id)
	return ok
}

func (r opencodeRequest) hasUser(s string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(opencodeText(m.Content), s) {
			return true
		}
	}
	return false
}

// opencodeModel is a scripted OpenAI-compatible chat completions API that records every
// request. It answers by what a request carries, not by its order: opencode asks for the
// session's title on the side, concurrently with the first turn.
type opencodeModel struct {
	mu   sync.Mutex
	reqs []opencodeRequest
	odd  []string // requests to anything but POST /v1/chat/completions
}

func (m *opencodeModel) requests() []opencodeRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// summary lists the requests received: those to anything but the chat completions, then each
// one's declared tools and its messages, cut at 300 bytes.
func (m *opencodeModel) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, o := range m.odd {
		fmt.Fprintf(&b, "unexpected %s\n", o)
	}
	for i, r := range m.reqs {
		fmt.Fprintf(&b, "%d. declares %q\n", i+1, r.declared())
		for _, msg := range r.Messages {
			text := opencodeText(msg.Content)
			if len(text) > 300 {
				text = text[:300] + "…"
			}
			fmt.Fprintf(&b, "   %s %s: %s\n", msg.Role, msg.ToolCallID, text)
		}
	}
	return b.String()
}

func (m *opencodeModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		m.mu.Lock()
		m.odd = append(m.odd, r.Method+" "+r.URL.Path)
		m.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	var req opencodeRequest
	req.raw, _ = io.ReadAll(r.Body)
	if err := json.Unmarshal(req.raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()

	// Latest step first: each request carries the whole conversation so far.
	switch {
	case req.hasResult(ocEchoID):
		writeOpencodeCompletion(w, req, ocFinal, nil)
	case req.hasResult(ocSearchID):
		writeOpencodeCompletion(w, req, "", &opencodeToolCall{id: ocEchoID, name: ocCallTool,
			args: map[string]any{"name": "fx__echo", "arguments": map[string]any{"message": ocMessage}}})
	case req.hasUser(ocPrompt) && slices.Contains(req.declared(), ocSearchTool):
		writeOpencodeCompletion(w, req, "", &opencodeToolCall{id: ocSearchID, name: ocSearchTool,
			args: map[string]any{"query": "select:fx__echo"}})
	default: // the title, or a turn off the script: end it
		writeOpencodeCompletion(w, req, "Echo via toolsift", nil)
	}
}

type opencodeToolCall struct {
	id, name string
	args     map[string]any
}

// writeOpencodeCompletion answers with text or, if call is set, with that tool call,
// streamed as server-sent events or as one JSON object, as the request asks.
func writeOpencodeCompletion(w http.ResponseWriter, req opencodeRequest, text string, call *opencodeToolCall) {
	finish := "stop"
	message := map[string]any{"role": "assistant", "content": text}
	if call != nil {
		args, _ := json.Marshal(call.args)
		finish = "tool_calls"
		message = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": call.id, "type": "function",
			"function": map[string]any{"name": call.name, "arguments": string(args)},
		}}}
	}
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	chunk := func(object string, choice map[string]any, u any) map[string]any {
		return map[string]any{"id": "chatcmpl-scripted", "object": object, "created": time.Now().Unix(),
			"model": req.Model, "choices": []any{choice}, "usage": u}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(chunk("chat.completion",
			map[string]any{"index": 0, "message": message, "finish_reason": finish}, usage))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	bw := bufio.NewWriter(w)
	for _, c := range []map[string]any{
		chunk("chat.completion.chunk", map[string]any{"index": 0, "delta": message, "finish_reason": nil}, nil),
		chunk("chat.completion.chunk", map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}, usage),
	} {
		b, _ := json.Marshal(c)
		fmt.Fprintf(bw, "data: %s\n\n", b)
	}
	fmt.Fprint(bw, "data: [DONE]\n\n")
	bw.Flush()
}
