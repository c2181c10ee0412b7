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
	files, _ := filepath.Glob(filepath.Join(catalogs, "*.json"))
	if len(files) < 40 {
		t.Fatalf("found %d catalogs in %s, want 41", len(files), catalogs)
	}
	var cfg strings.Builder
	cfg.WriteString("mcpServers:\n")
	var all []json.RawMessage
	servers := 0
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if name == "azure-all" {
			continue // an alternative view of azure
		}
		servers++
		fmt.Fprintf(&cfg, "  %s:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n", name, fixtureBin, f)
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, list.Tools...)
	}
	c := proxy(t, cfg.String())
	// A select of no tool waits for every server's first connection and unlocks nothing.
	c.search("select:no_such_tool", 1)
	m := c.request("tools/list", nil)
	direct, _ := json.Marshal(map[string]any{"tools": all})
	t.Logf("%d servers, %d tools: tools/list through toolsift %d bytes, all tools %d bytes (%.2f%%)",
		servers, len(all), len(m.Result), len(direct), 100*float64(len(m.Result))/float64(len(direct)))
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
