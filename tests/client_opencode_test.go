package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
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
//     holds the search result until opencode has re-listed (the log says hold=relisted);
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

	// The client's toolsift must find the catalog cached, as it would after a first run:
	// warm the very cache directory opencode's toolsift will be given.
	env := isolatedEnv(t)
	cfg := config(t, fmt.Sprintf("mcpServers:\n  fx:\n    command: %q\n", fixtureBin))
	warmCache(t, env, bin, cfg, "echo")

	model := &opencodeModel{}
	api := httptest.NewServer(model) // 127.0.0.1 only
	defer api.Close()
	logFile := filepath.Join(t.TempDir(), "toolsift.log")
	home := t.TempDir()
	writeOpencodeConfig(t, home, map[string]any{
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
				"command": []string{bin, "--config", cfg, "--log-level", "debug", "--log-file", logFile},
				// opencode's own XDG_CACHE_HOME is under its HOME; toolsift needs the warm one.
				"environment": map[string]string{
					"XDG_CACHE_HOME": opencodeEnvValue(env, "XDG_CACHE_HOME"),
					"GORACE":         "atexit_sleep_ms=0",
				},
			},
		},
	})

	stdout, stderr, runErr := runOpencode(t, oc, home)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("opencode stdout:\n%s\nopencode stderr (its log):\n%s", stdout, stderr)
			model.dump(t)
			b, _ := os.ReadFile(logFile)
			t.Logf("toolsift log:\n%s", b)
		}
	})
	if runErr != nil {
		t.Errorf("opencode run: %v", runErr)
	}
	if !strings.Contains(stdout, ocFinal) {
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
	lines := opencodeLogLines(t, logFile)
	at := func(msg string) int {
		return slices.IndexFunc(lines, func(l string) bool { return opencodeLogField(l, "msg") == msg })
	}
	if at("catalog from cache") < 0 {
		t.Errorf("toolsift did not start from the warm cache")
	}
	if i := at("client connected"); i < 0 {
		t.Errorf("no client connected line")
	} else {
		t.Logf("opencode connects as client=%q version=%q holds=%s", opencodeLogField(lines[i], "client"),
			opencodeLogField(lines[i], "client_version"), opencodeLogField(lines[i], "holds"))
	}
	search := at("tool search")
	if search < 0 {
		t.Fatalf("no tool search line")
	}
	if hold := opencodeLogField(lines[search], "hold"); hold != "relisted" {
		t.Errorf("tool search ended its hold with %q, want relisted: %s", hold, lines[search])
	}
	// The search logs its own list_changed (reason=search) before its line; any other one
	// before it came from toolsift's start, with nothing changed since the cached catalog.
	// (At cba2365 the prompts and resources list_changed sent when an upstream connects are
	// not logged, so this cannot see them.)
	for _, l := range lines[:search] {
		msg := opencodeLogField(l, "msg")
		if strings.Contains(msg, "list_changed") && !strings.Contains(msg, "not sent") &&
			!strings.HasPrefix(opencodeLogField(l, "reason"), "search") {
			t.Errorf("list_changed sent before the first tool search: %s", l)
		}
	}
	// A write to a server being stopped at exit is dropped quietly, not logged as an error.
	for _, l := range lines {
		if strings.Contains(l, "Error writing response") {
			t.Errorf("toolsift logged an error at exit: %s", l)
		}
	}
	t.Logf("tool search: hold=%s duration_ms=%s", opencodeLogField(lines[search], "hold"), opencodeLogField(lines[search], "duration_ms"))
}

// runOpencode runs `opencode run` on the prompt, with home as its HOME and every XDG
// directory, in a fresh project directory, and waits until it and everything it started
// have exited, so that toolsift's log is complete. It returns opencode's stdout and stderr.
func runOpencode(t *testing.T, oc, home string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, oc, "run", "--print-logs", "--model", "fake/scripted", ocPrompt)
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
	// opencode, toolsift and the fixture share a process group: a timeout kills them all,
	// and the test can tell when all of them are gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	t.Logf("opencode ran %v", time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v: %w", 120*time.Second, err)
	}
	if cmd.Process != nil {
		pgid := cmd.Process.Pid
		deadline := time.Now().Add(10 * time.Second)
		for len(opencodeGroup(pgid)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if left := opencodeGroup(pgid); len(left) > 0 {
			t.Errorf("processes %v (toolsift, its upstream?) still running 10s after opencode exited", left)
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	return out.String(), errOut.String(), err
}

// opencodeGroup returns the live (not zombie) processes of process group pgid.
func opencodeGroup(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// After "(comm)": state ppid pgrp …
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// writeOpencodeConfig writes opencode's global configuration under home.
func writeOpencodeConfig(t *testing.T, home string, cfg map[string]any) {
	t.Helper()
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "opencode.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// opencodeEnvValue returns the value env gives key: the last one, as exec takes it.
func opencodeEnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// opencodeLogLines returns the lines of toolsift's log.
func opencodeLogLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("toolsift's log: %v", err)
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

// opencodeLogField returns the value of key in a slog text line, unquoted; "" if absent.
func opencodeLogField(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+2:]
	if strings.HasPrefix(rest, `"`) {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			s, _ := strconv.Unquote(q)
			return s
		}
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
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

func (m *opencodeModel) dump(t *testing.T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.odd {
		t.Logf("model API: unexpected %s", o)
	}
	for i, r := range m.reqs {
		t.Logf("model request %d declares %q", i+1, r.declared())
		for _, msg := range r.Messages {
			text := opencodeText(msg.Content)
			if len(text) > 300 {
				text = text[:300] + "…"
			}
			t.Logf("  %s %s: %s", msg.Role, msg.ToolCallID, text)
		}
	}
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
