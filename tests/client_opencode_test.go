package tests

import (
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// What the scripted model and the assertions agree on. opencode declares an MCP tool to the
// model as <server>_<tool>, the server named as in its config.
const (
	ocServer     = "toolsift"
	ocSearchTool = ocServer + "_tool_search"
	ocCallTool   = ocServer + "_call_tool"
	ocEchoTool   = ocServer + "_fx__echo" // toolsift's fx__echo, once unlocked
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

	model := &chatModel{search: ocSearchTool, call: ocCallTool}
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
	if !strings.Contains(run.stdout, chatFinal) {
		t.Errorf("opencode did not print the model's final answer %q", chatFinal)
	}

	// What the model saw.
	model.checkScript(t, ocEchoTool, ocCallTool)

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
	cmd := exec.Command(oc, "run", "--print-logs", "--model", "fake/scripted", chatPrompt)
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
