package poison

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The 41 real catalogs raise no flag.
func TestRealCatalogs(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "bench", "catalogs", "*.json"))
	if len(files) < 41 {
		t.Fatalf("found %d catalogs, want 41", len(files))
	}
	tools := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Tools []struct {
				Name         string
				Description  string
				InputSchema  json.RawMessage
				OutputSchema json.RawMessage
			}
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			tools++
			for _, f := range Check(tool.Description, tool.InputSchema, tool.OutputSchema) {
				t.Errorf("%s %s: %s at %s: %q", filepath.Base(f.Field), tool.Name, f.Rule, f.Field, f.Excerpt)
			}
		}
	}
	t.Logf("%d tools checked", tools)
}
