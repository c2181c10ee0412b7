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

// What the scripted model and the assertions agree on. Copilot CLI declares an MCP tool to
// the model as <server>-<tool>.
const (
	cpServer     = "toolsift"
	cpSearchTool = cpServer + "-tool_search"
	cpCallTool   = cpServer + "-call_tool"
	cpEchoTool   = cpServer + "-fx__echo" // toolsift's fx__echo, once unlocked
)

// TestCopilotUnlockedToolInNextRequest runs the real GitHub Copilot CLI headless and offline
// against a scripted OpenAI-compatible model, with toolsift (over stdio, catalog cache warm)
// as its only MCP server, configured as toolsift setup copilot writes it (deferTools:
// never). It proves that, with Copilot CLI:
//   - the tool a tool_search unlocks is declared in the very next model request;
//   - a call by Copilot's own name for it (toolsift-fx__echo) reaches the upstream, and its
//     answer comes back to the model;
//   - toolsift knows Copilot (client=copilot-cli holds=false): Copilot re-lists once it
//     reads the result, so the result is not held, and list_changed goes out before it;
//   - toolsift, starting from a warm cache, sends no list_changed before the first search.
func TestCopilotUnlockedToolInNextRequest(t *testing.T) {
	home := t.TempDir()
	env := copilotEnv(home, "")
	cp := clientBin(t, "copilot", env)

	cfg, cache := warmToolsift(t)
	model := &chatModel{search: cpSearchTool, call: cpCallTool, echo: cpEchoTool}
	api := httptest.NewServer(model) // 127.0.0.1 only
	defer api.Close()
	logFile := filepath.Join(t.ArtifactDir(), "toolsift.log")
	writeJSON(t, filepath.Join(home, ".copilot", "mcp-config.json"), map[string]any{
		"mcpServers": map[string]any{
			cpServer: map[string]any{
				"type":       "local",
				"command":    bin,
				"args":       toolsiftArgs(cfg, logFile),
				"env":        toolsiftEnv(cache),
				"tools":      []string{"*"},
				"deferTools": "never",
			},
		},
	})

	cmd := exec.Command(cp, "-p", chatPrompt, "--allow-all-tools", "--no-auto-update", "--disable-builtin-mcps")
	cmd.Dir = t.TempDir()
	cmd.Env = copilotEnv(home, api.URL+"/v1")
	run := runClient(t, cmd, logFile, model.summary)
	if run.err != nil {
		t.Errorf("copilot: %v", run.err)
	}
	if !strings.Contains(run.stdout, chatFinal) {
		t.Errorf("copilot did not print the model's final answer %q", chatFinal)
	}

	model.checkScript(t, cpEchoTool, cpEchoTool)
	if !slices.ContainsFunc(run.log, func(l string) bool { return logField(l, "msg") == "catalog from cache" }) {
		t.Errorf("toolsift did not start from the warm cache")
	}
	checkToolsiftLog(t, run.log, "copilot-cli", false)
}

// copilotEnv is Copilot CLI's environment, built from scratch so that nothing of the
// caller's (a GitHub token, a configured model) reaches it: home as its HOME and every XDG
// folder (it caches tool lists under XDG_CACHE_HOME), offline, against the model at base.
func copilotEnv(home, base string) []string {
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"TERM=dumb",
		"LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"COPILOT_OFFLINE=true",
		"NO_UPDATE_NOTIFIER=1",
	}
	if base != "" {
		env = append(env, "COPILOT_PROVIDER_BASE_URL="+base, "COPILOT_MODEL=gpt-4.1", "COPILOT_PROVIDER_API_KEY=dummy")
	}
	return env
}
