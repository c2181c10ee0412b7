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

	// The toolsift Gemini starts must find the catalog already cached.
	cfg, cache := warmToolsift(t)

	logFile := filepath.Join(t.ArtifactDir(), "toolsift.log")
	// The model answers the prompt only once toolsift has connected the fixture.
	api := newFakeGemini(t, func() { awaitUpstream(t, logFile) })
	home := t.TempDir()
	writeGeminiSettings(t, home, map[string]any{
		"command": bin,
		"args":    toolsiftArgs(cfg, logFile),
		// Gemini starts its MCP servers with its own environment (which names no cache),
		// redacted; what toolsift needs is set here.
		"env": toolsiftEnv(cache),
	})

	run := runGemini(t, gemini, home, api, logFile)
	if run.err != nil {
		t.Fatalf("gemini: %v", run.err)
	}
	t.Logf("model requests:\n%s", api.summary())

	// The unlocked tool is in the very next model request.
	echoName := geminiName("fx__echo")
	declared, ok := api.declaredAfter(geminiName("tool_search"))
	switch {
	case !ok:
		t.Error("no model request carried the tool_search result")
	case !slices.Contains(declared, echoName):
		t.Errorf("the model request carrying the tool_search result does not declare %s; it declares %q",
			echoName, declared)
	}

	// call_tool reached the fixture and its echo reached the model. Gemini hands the model an
	// MCP result's text as {"output": text}.
	if resp, ok := api.responseTo(geminiName("call_tool")); !ok {
		t.Error("no model request carried the call_tool result")
	} else {
		var r struct{ Output string }
		json.Unmarshal(resp, &r)
		if !strings.Contains(r.Output, `"arguments":{"message":"`+geminiMessage+`"}`) ||
			!strings.Contains(r.Output, `"tool":"echo"`) {
			t.Errorf("the call_tool result sent to the model is not the fixture's echo of %q: %s",
				geminiMessage, resp)
		}
	}

	checkToolsiftLog(t, run.log, "gemini-cli-mcp-client", true)
}

// runGemini runs Gemini CLI headless on the prompt with home as its home directory and api
// as its model API; its toolsift logs to logFile. Only loopback is reached: telemetry, usage
// statistics and update checks are off in the settings.
func runGemini(t *testing.T, gemini, home string, api *fakeGemini, logFile string) clientRun {
	t.Helper()
	cmd := exec.Command(gemini, "--prompt", geminiPrompt, "--yolo", "--output-format", "json")
	cmd.Dir = t.TempDir() // a project folder with no GEMINI.md, git repository or settings
	// Not os.Environ(): a developer's own Gemini or Google Cloud variables would change the
	// auth Gemini picks and where it sends requests.
	cmd.Env = []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TERM=dumb",
		"NO_COLOR=1",
		"GEMINI_API_KEY=e2e-fake-key",
		"GOOGLE_GEMINI_BASE_URL=" + api.URL,
		// A fresh project folder is untrusted, and Gemini does not start MCP servers of an
		// untrusted folder.
		"GEMINI_CLI_TRUST_WORKSPACE=true",
	}
	return runClient(t, cmd, logFile, api.summary)
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
	writeJSON(t, filepath.Join(home, ".gemini", "settings.json"), settings)
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
