package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenBudget serves all 41 public catalogs (1,142 tools) through toolsift and compares
// the first tools/list a client gets with listing every tool directly. With
// TOOLSIFT_MEASURE_DIR set it writes both as JSON there, for tokens.mjs to count.
func TestTokenBudget(t *testing.T) {
	cfg, tools := benchConfig(t, "")
	all := make([]json.RawMessage, len(tools))
	for i, tool := range tools {
		all[i] = tool
	}
	c := start(t, bin, "--config", cfg, "--log-level", "debug")
	t.Cleanup(func() { c.checkStdout() })
	c.initialize()
	// A select of no tool waits for every server's first connection and unlocks nothing.
	c.search("select:no_such_tool", 1)
	m := c.request("tools/list", nil)
	direct, _ := json.Marshal(map[string]any{"tools": all})
	t.Logf("%d tools: tools/list through toolsift %d bytes, all tools %d bytes (%.2f%%)",
		len(all), len(m.Result), len(direct), 100*float64(len(m.Result))/float64(len(direct)))
	if len(all) < 1100 {
		t.Errorf("catalogs hold %d tools, want 1,142", len(all))
	}
	if len(m.Result)*50 > len(direct) {
		t.Errorf("tools/list through toolsift is %d bytes, over 2%% of listing everything (%d)", len(m.Result), len(direct))
	}
	if !strings.Contains(string(m.Result), fmt.Sprintf("- github (%d tools)", 26)) {
		t.Errorf("tool_search description does not list github's 26 tools")
	}
	if dir := os.Getenv("TOOLSIFT_MEASURE_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, "proxied.json"), m.Result, 0o644)
		os.WriteFile(filepath.Join(dir, "direct.json"), direct, 0o644)
		sr, _ := c.call("tool_search", map[string]any{"query": "create issue"})
		b, _ := json.Marshal(sr)
		os.WriteFile(filepath.Join(dir, "search.json"), b, 0o644)
	}
}
