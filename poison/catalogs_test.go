package poison

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

type catalogTool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
}

// eachCatalogTool calls f with each tool of the 41 real catalogs.
func eachCatalogTool(t testing.TB, f func(catalogTool)) {
	files, _ := filepath.Glob(filepath.Join("..", "bench", "catalogs", "*.json"))
	if len(files) < 41 {
		t.Fatalf("found %d catalogs, want 41", len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var list struct{ Tools []catalogTool }
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			f(tool)
		}
	}
}

// catalogStrings calls f with every text of the 41 real catalogs: descriptions and the
// strings of schemas.
func catalogStrings(t testing.TB, f func(string)) {
	eachCatalogTool(t, func(tool catalogTool) {
		f(tool.Description)
		for _, s := range []json.RawMessage{tool.InputSchema, tool.OutputSchema} {
			eachString(s, "", func(_, text string) { f(text) })
		}
	})
}

// The 41 real catalogs raise no flag.
func TestRealCatalogs(t *testing.T) {
	tools := 0
	eachCatalogTool(t, func(tool catalogTool) {
		tools++
		for _, f := range Check(tool.Description, tool.InputSchema, tool.OutputSchema) {
			t.Errorf("%s: %s at %s: %q", tool.Name, f.Rule, f.Field, f.Excerpt)
		}
	})
	t.Logf("%d tools checked", tools)
}
