package tests

import (
	"context"
	"encoding/json"
	"errors"
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
	"syscall"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/mcptest"
)

// geminiServer is the name toolsift is registered under in Gemini CLI's settings.
const geminiServer = "toolsift"

// geminiName is Gemini's name for toolsift's tool t (names over 63 characters, which these
// are not, are cut in the middle).
func geminiName(t string) string { return "mcp_" + geminiServer + "_" + t }

// geminiMessage is what the fake model asks call_tool to echo; the test looks for it in
// the tool result Gemini sends back.
const geminiMessage = "hello-from-model"

// geminiPrompt is the user's prompt; the fake model answers the turn carrying it with a
// tool_search call.
const geminiPrompt = "Find the echo tool with tool_search, then call it through call_tool with the message " +
	geminiMessage + "."

// TestGeminiCLIUnlockedToolInNextRequest runs the real, pinned Gemini CLI headless and
// offline against a scripted fake Gemini API, with toolsift (on a warm catalog cache) as its
// only MCP server. It proves, on what the client actually sends:
//   - the tool that tool_search unlocks is declared in the very model request that carries
//     the tool_search result (the hold waited for Gemini's re-list and its settle);
//   - call_tool reaches the upstream and its result reaches the model;
//   - toolsift recognised Gemini (client=gemini-cli-mcp-client), the search ended its hold
//     with hold=relisted, and no list_changed was sent before the first search, though the
//     fake model answers only after toolsift has connected its (cached) upstream.
func TestGeminiCLIUnlockedToolInNextRequest(t *testing.T) {
	gemini := clientBin(t, "gemini", []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")})

	// The toolsift Gemini starts must find the catalog already cached: warm it in the same
	// cache directory.
	env := isolatedEnv(t)
	cacheHome := geminiEnvValue(env, "XDG_CACHE_HOME")
	cfg := config(t, "mcpServers:\n  fx:\n    command: "+fixtureBin+"\n")
	warmCache(t, env, bin, cfg, "select:fx__echo")

	logFile := filepath.Join(t.ArtifactDir(), "toolsift.log")
	// The model answers the prompt only once toolsift has connected the fixture, which it
	// starts a second late when its catalog is cached: a list change on connecting would
	// then come before the first search, as it would behind a real model's latency, rather
	// than race it.
	api := newFakeGemini(t, func() {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if b, _ := os.ReadFile(logFile); strings.Contains(string(b), `msg="upstream connected"`) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	home := t.TempDir()
	writeGeminiSettings(t, home, map[string]any{
		"command": bin,
		"args":    []string{"--config", cfg, "--log-level", "debug", "--log-file", logFile},
		// Gemini starts its MCP servers with its own environment (which names no cache),
		// redacted; what toolsift needs is set here.
		"env": map[string]string{"XDG_CACHE_HOME": cacheHome, "GORACE": "atexit_sleep_ms=0"},
	})

	out, runErr := runGemini(t, gemini, home, api.URL, geminiPrompt)
	log := readGeminiToolsiftLog(t, logFile)
	report := func() string {
		return fmt.Sprintf("gemini output:\n%s\nmodel requests:\n%s\ntoolsift log:\n%s", out, api.summary(), log)
	}
	if runErr != nil {
		t.Fatalf("gemini: %v\n%s", runErr, report())
	}
	t.Logf("model requests:\n%s", api.summary())

	// The unlocked tool is in the very next model request.
	echoName := geminiName("fx__echo")
	declared, ok := api.declaredAfter(geminiName("tool_search"))
	switch {
	case !ok:
		t.Errorf("no model request carried the tool_search result\n%s", report())
	case !slices.Contains(declared, echoName):
		t.Errorf("the model request carrying the tool_search result does not declare %s; it declares %q\n%s",
			echoName, declared, report())
	}

	// call_tool reached the fixture and its echo reached the model. Gemini hands the model an
	// MCP result's text as {"output": text}.
	if resp, ok := api.responseTo(geminiName("call_tool")); !ok {
		t.Errorf("no model request carried the call_tool result\n%s", report())
	} else {
		var r struct{ Output string }
		json.Unmarshal(resp, &r)
		if !strings.Contains(r.Output, `"arguments":{"message":"`+geminiMessage+`"}`) ||
			!strings.Contains(r.Output, `"tool":"echo"`) {
			t.Errorf("the call_tool result sent to the model is not the fixture's echo of %q: %s\n%s",
				geminiMessage, resp, report())
		}
	}

	if !strings.Contains(log, "client=gemini-cli-mcp-client") {
		t.Errorf("toolsift did not log client=gemini-cli-mcp-client\n%s", report())
	}
	lines := strings.Split(log, "\n")
	searchLine := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `msg="tool search"`) })
	if searchLine < 0 {
		t.Fatalf("toolsift logged no tool search\n%s", report())
	}
	if !strings.Contains(lines[searchLine], "hold=relisted") {
		t.Errorf("the tool search did not end its hold with hold=relisted: %s\n%s", lines[searchLine], report())
	}
	// With a warm cache the tool list Gemini first read is already complete: a list change
	// before the first search only costs the client a pointless re-list. The search's own
	// list_changed (reason=search) is logged before the search's line, which is written when
	// the search ends.
	for _, line := range lines[:searchLine] {
		if strings.Contains(line, `msg="list_changed sent"`) && !strings.Contains(line, "reason=search") {
			t.Errorf("list_changed sent before the first tool search: %s\n%s", line, report())
		}
	}
	if strings.Contains(log, "Error writing response") {
		t.Errorf("toolsift logged an error at exit:\n%s", log)
	}
}

// runGemini runs Gemini CLI headless on prompt with home as its home directory and baseURL
// as its model API, and returns its combined output. Only loopback is reached: telemetry,
// usage statistics and update checks are off in the settings.
func runGemini(t *testing.T, gemini, home, baseURL, prompt string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, "--prompt", prompt, "--yolo", "--output-format", "json")
	cmd.Dir = t.TempDir() // a project folder with no GEMINI.md, git repository or settings
	// Not os.Environ(): a developer's own Gemini or Google Cloud variables would change the
	// auth Gemini picks and where it sends requests.
	cmd.Env = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TERM=dumb",
		"NO_COLOR=1",
		"GEMINI_API_KEY=e2e-fake-key",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
		// A fresh project folder is untrusted, and Gemini does not start MCP servers of an
		// untrusted folder.
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	}
	// Gemini spawns toolsift, which spawns the fixture: kill the whole group on timeout, and
	// whatever outlives Gemini once the test is done.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out mcptest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("gemini ran %v", time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v: %w", time.Since(start).Round(time.Second), err)
	}
	if cmd.Process != nil {
		awaitGeminiGroup(t, cmd.Process.Pid)
	}
	return out.String(), err
}

// awaitGeminiGroup gives the processes Gemini left behind (toolsift shutting down writes its
// last log lines then) a few seconds to end, then kills them.
func awaitGeminiGroup(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Errorf("processes of gemini's group still running 10s after it exited; killing them")
			syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeGeminiSettings writes home/.gemini/settings.json registering server as the only MCP
// server, with everything that would reach past loopback turned off.
func writeGeminiSettings(t *testing.T, home string, server map[string]any) {
	t.Helper()
	settings := map[string]any{
		"security":   map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":    map[string]any{"usageStatisticsEnabled": false},
		"telemetry":  map[string]any{"enabled": false},
		"general":    map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"mcpServers": map[string]any{geminiServer: server},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// readGeminiToolsiftLog reads toolsift's log file; a missing file reads as empty, so that the
// assertions, not this, report a toolsift that never started.
func readGeminiToolsiftLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// geminiEnvValue returns the last value of key in env, as exec would use it.
func geminiEnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// geminiRequest is the part of a GenerateContentRequest the fake model reads.
type geminiRequest struct {
	Contents []struct {
		Parts []struct {
			Text             string `json:"text"`
			FunctionResponse *struct {
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// declared returns the names of the functions the request declares.
func (r geminiRequest) declared() []string {
	var out []string
	for _, t := range r.Tools {
		for _, d := range t.FunctionDeclarations {
			out = append(out, d.Name)
		}
	}
	return out
}

// lastResponse returns the function response in the request's last turn, if any: what the
// model is being asked to go on from.
func (r geminiRequest) lastResponse() (name string, response json.RawMessage, ok bool) {
	if len(r.Contents) == 0 {
		return "", nil, false
	}
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if p.FunctionResponse != nil {
			return p.FunctionResponse.Name, p.FunctionResponse.Response, true
		}
	}
	return "", nil, false
}

// lastTurnSays reports whether the request's last turn has text containing s.
func (r geminiRequest) lastTurnSays(s string) bool {
	if len(r.Contents) == 0 {
		return false
	}
	for _, p := range r.Contents[len(r.Contents)-1].Parts {
		if strings.Contains(p.Text, s) {
			return true
		}
	}
	return false
}

// geminiRecorded is one request the fake model received.
type geminiRecorded struct {
	at   time.Duration // since the fake started
	path string
	req  geminiRequest
	// answer says what the fake model did with it, for failure messages.
	answer string
}

// fakeGemini is a scripted Gemini API. It answers by what a request carries, not by its
// order, because Gemini interleaves side requests (the model router, next-speaker checks,
// token counts) with the turns of the conversation. Every request body is saved in the
// test's artifact directory (kept with go test -artifacts).
type fakeGemini struct {
	*httptest.Server
	started time.Time
	dir     string
	think   func() // runs before the model answers the user's prompt
	mu      sync.Mutex
	reqs    []geminiRecorded // every request received, in order
}

func newFakeGemini(t *testing.T, think func()) *fakeGemini {
	f := &fakeGemini{started: time.Now(), dir: t.ArtifactDir(), think: think}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeGemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := geminiRecorded{at: time.Since(f.started), path: r.URL.Path}
	_ = json.Unmarshal(body, &rec.req)
	method := r.URL.Path[strings.LastIndex(r.URL.Path, ":")+1:]
	var resp any
	rec.answer, resp = geminiScript(method, rec.req)
	if rec.answer == geminiSearchAnswer {
		f.think()
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	n := len(f.reqs)
	f.mu.Unlock()
	_ = os.WriteFile(filepath.Join(f.dir, fmt.Sprintf("request-%02d-%s.json", n, method)), body, 0o644)

	switch {
	case resp == nil:
		http.NotFound(w, r)
	case method == "streamGenerateContent":
		// Gemini asks for ?alt=sse: one event holding the whole response is a valid stream.
		b, _ := json.Marshal(resp)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", b)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
	}
}

// geminiSearchAnswer is how the fake model answers the user's prompt.
const geminiSearchAnswer = "call tool_search"

// geminiScript is the fake model: what it does with a request of method (the part of the
// path after the colon), and the response, nil for an unknown method.
func geminiScript(method string, req geminiRequest) (answer string, resp any) {
	switch method {
	case "countTokens":
		return "token count", map[string]any{"totalTokens": 100}
	case "generateContent", "streamGenerateContent":
	default:
		return "404", nil
	}
	var parts []map[string]any
	name, response, isResponse := req.lastResponse()
	switch {
	// Only the conversation's own turns declare the MCP tools; side requests (the router,
	// JSON-schema checks) declare none.
	case !slices.Contains(req.declared(), geminiName("tool_search")):
		answer = "side request"
		// Fits the router's complexity classifier and the next-speaker check.
		parts = []map[string]any{{"text": `{"complexity_reasoning":"e2e","complexity_score":10,` +
			`"reasoning":"e2e","next_speaker":"user"}`}}
	case isResponse && name == geminiName("tool_search"):
		answer = "call call_tool"
		parts = []map[string]any{geminiFunctionCall(geminiName("call_tool"),
			map[string]any{"name": "fx__echo", "arguments": map[string]any{"message": geminiMessage}})}
	case isResponse && name == geminiName("call_tool"):
		answer = "final text"
		parts = []map[string]any{{"text": "The echo tool answered."}}
	case isResponse:
		answer = fmt.Sprintf("final text (unexpected result of %s: %.200s)", name, response)
		parts = []map[string]any{{"text": "Done."}}
	case req.lastTurnSays(geminiPrompt):
		answer = geminiSearchAnswer
		parts = []map[string]any{geminiFunctionCall(geminiName("tool_search"),
			map[string]any{"query": "select:fx__echo"})}
	default:
		answer = "final text (unexpected turn)"
		parts = []map[string]any{{"text": "Done."}}
	}
	return answer, map[string]any{
		"candidates": []map[string]any{{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
	}
}

func geminiFunctionCall(name string, args map[string]any) map[string]any {
	return map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
}

// declaredAfter returns the functions declared by the first request whose last turn is the
// result of the tool.
func (f *fakeGemini) declaredAfter(tool string) ([]string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rec := range f.reqs {
		if name, _, ok := rec.req.lastResponse(); ok && name == tool {
			return rec.req.declared(), true
		}
	}
	return nil, false
}

// responseTo returns the raw function response of the first request whose last turn is the
// result of the tool.
func (f *fakeGemini) responseTo(tool string) (json.RawMessage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rec := range f.reqs {
		if name, resp, ok := rec.req.lastResponse(); ok && name == tool {
			return resp, true
		}
	}
	return nil, false
}

// summary lists the requests received: when, path, the answer given, the MCP tools declared
// and what the last turn carried.
func (f *fakeGemini) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	for i, rec := range f.reqs {
		var mcpTools []string
		declared := rec.req.declared()
		for _, name := range declared {
			if strings.HasPrefix(name, "mcp_") {
				mcpTools = append(mcpTools, name)
			}
		}
		fmt.Fprintf(&b, "%d. +%v %s -> %s; declares %q and %d built-in tools", i+1, rec.at.Round(time.Millisecond),
			rec.path, rec.answer, mcpTools, len(declared)-len(mcpTools))
		if name, resp, ok := rec.req.lastResponse(); ok {
			fmt.Fprintf(&b, "; carries the result of %s: %.300s", name, resp)
		}
		b.WriteString("\n")
	}
	return b.String()
}
