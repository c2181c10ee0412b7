package stats

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// listing30 is a session's list of 30 tools from the github catalog, and that catalog.
func listing30(b *testing.B) Listing {
	data, err := os.ReadFile(filepath.Join("..", "bench", "catalogs", "github.json"))
	if err != nil {
		b.Fatal(err)
	}
	var list struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(data, &list); err != nil {
		b.Fatal(err)
	}
	var all []Def
	for _, t := range list.Tools {
		all = append(all, Def{Server: "github", Raw: t})
	}
	return Listing{Catalog: &list, All: func() []Def { return all }, Listed: append(all, all[:4]...)}
}

// BenchmarkRequest is what the recorder's goroutine spends on one model request of a
// session listing 30 tools, their counts remembered.
func BenchmarkRequest(b *testing.B) {
	l := listing30(b)
	r := &Recorder{chains: map[string][]*Search{}}
	r.request(testTime, "s", "c", l)
	b.ResetTimer()
	for b.Loop() {
		r.request(testTime, "s", "c", l)
	}
}

// BenchmarkRequestUncounted is the same without remembering counts: every definition is
// tokenized at every request.
func BenchmarkRequestUncounted(b *testing.B) {
	l := listing30(b)
	for b.Loop() {
		for _, d := range l.Listed {
			Count(string(d.Raw))
		}
	}
}
