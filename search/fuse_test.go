package search

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

func fuseDocs() []Doc {
	return []Doc{
		{Name: "gh__create_issue", Tool: "create_issue", Server: "gh", Description: "Create a new issue in a repository."},
		{Name: "gh__list_issues", Tool: "list_issues", Server: "gh", Description: "List the issues of a repository."},
		{Name: "gh__create_branch", Tool: "create_branch", Server: "gh", Description: "Create a branch in a repository."},
		{Name: "lab__create_issue", Tool: "create_issue", Server: "lab", Description: "Create a new issue in a project."},
		{Name: "chat__send_message", Tool: "send_message", Server: "chat", Description: "Send a message to a channel."},
		{Name: "fs__read_file", Tool: "read_file", Server: "fs", Description: "Read a file from disk."},
		{Name: "fs__write_file", Tool: "write_file", Server: "fs", Description: "Write a file to disk."},
		{Name: "fs__list_directory", Tool: "list_directory", Server: "fs", Description: "List a directory."},
	}
}

// sims gives the named docs a similarity, and every other doc a low one; NaN for the names
// in missing.
func sims(ix *Index, near map[string]float64, missing ...string) []float64 {
	out := make([]float64, ix.Len())
	for i, d := range ix.Docs() {
		out[i] = 0.1
		if s, ok := near[d.Name]; ok {
			out[i] = s
		}
		for _, m := range missing {
			if d.Name == m {
				out[i] = math.NaN()
			}
		}
	}
	return out
}

func names(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

func mustQuery(t *testing.T, s string) Query {
	t.Helper()
	q, err := ParseQuery(s)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", s, err)
	}
	return q
}

func TestFuse(t *testing.T) {
	ix := NewIndex(fuseDocs())
	complaint := map[string]float64{"gh__create_issue": 0.9, "lab__create_issue": 0.8}
	tests := []struct {
		name  string
		query string
		sims  []float64
		limit int
		want  []string
	}{
		// A request that shares no word with its tool is found by meaning alone.
		{"by meaning alone", "lodge a complaint", sims(ix, complaint), 5, []string{"gh__create_issue", "lab__create_issue"}},
		// The nearest stays even when nothing stands out (all alike).
		{"nothing stands out", "lodge a complaint", sims(ix, nil), 5, []string{"chat__send_message"}},
		// server: and +required admit to the ranking by meaning what they admit to words.
		{"server filters meaning", "server:lab lodge a complaint", sims(ix, complaint), 5, []string{"lab__create_issue"}},
		{"required filters meaning", "+project lodge a complaint", sims(ix, complaint), 5, []string{"lab__create_issue"}},
		{"required nobody has", "+zebra lodge a complaint", sims(ix, complaint), 5, nil},
		// A tool without a vector is ranked by words only; one with none is not ranked by meaning.
		{"no vector", "lodge a complaint", sims(ix, complaint, "gh__create_issue"), 5, []string{"lab__create_issue"}},
		// The first by words goes before the first by meaning, when neither is in the other.
		{"words first", "send a message", sims(ix, map[string]float64{"fs__read_file": 0.9}), 5, []string{"chat__send_message", "fs__read_file"}},
		// A tool near the top of both rankings passes the first of either alone; the first
		// by meaning alone comes after at most three by words alone.
		{"both beat one", "create", sims(ix, map[string]float64{"gh__create_branch": 0.9, "fs__read_file": 0.95}), 4, []string{"gh__create_branch", "gh__create_issue", "lab__create_issue", "fs__read_file"}},
		{"limit", "lodge a complaint", sims(ix, complaint), 1, []string{"gh__create_issue"}},
	}
	for _, tt := range tests {
		hits, unknown := ix.Fuse(mustQuery(t, tt.query), tt.limit, tt.sims)
		if got := names(hits); !reflect.DeepEqual(got, tt.want) || unknown != nil {
			t.Errorf("%s: Fuse(%q) = %q, %q; want %q", tt.name, tt.query, got, unknown, tt.want)
		}
	}
}

// TestFuseScores checks the arithmetic: weight/(k+rank) summed over the rankings.
func TestFuseScores(t *testing.T) {
	ix := NewIndex(fuseDocs())
	q := mustQuery(t, "create issue")
	words, _ := ix.Search(q, 0)
	if len(words) < 2 {
		t.Fatalf("words = %v", words)
	}
	hits, _ := ix.Fuse(q, 0, sims(ix, map[string]float64{words[1].Name: 0.9}))
	want := map[string]float64{
		words[0].Name: fuseWordWeight / (fuseK + 1),
		words[1].Name: fuseWordWeight/(fuseK+2) + fuseMeaningWeight/(fuseK+1),
	}
	if hits[0].Name != words[1].Name {
		t.Errorf("fused first = %s, want %s (second by words, first by meaning)", hits[0].Name, words[1].Name)
	}
	for _, h := range hits {
		if w, ok := want[h.Name]; ok && math.Abs(h.Score-w) > 1e-12 {
			t.Errorf("score of %s = %v, want %v", h.Name, h.Score, w)
		}
	}
	if len(hits) != len(words) {
		t.Errorf("fused %d hits, words %d: the meaning's one is among the words'", len(hits), len(words))
	}
}

// TestFuseWithoutMeaningIsSearch: with no similarity to fuse, Fuse is Search, scores and
// all; select: is never fused.
func TestFuseWithoutMeaningIsSearch(t *testing.T) {
	ix := NewIndex(fuseDocs())
	allNaN := sims(ix, nil)
	for i := range allNaN {
		allNaN[i] = math.NaN()
	}
	withInf := sims(ix, nil)
	for i := range withInf {
		withInf[i] = math.Inf(1)
	}
	for _, query := range []string{"create issue", "server:fs file", "+issue create", "select:gh__list_issues,nope", "select:create_issue"} {
		q := mustQuery(t, query)
		for _, limit := range []int{0, 1, 5} {
			wantHits, wantUnknown := ix.Search(q, limit)
			for name, s := range map[string][]float64{"nil": nil, "short": {0.5}, "all NaN": allNaN, "all Inf": withInf} {
				hits, unknown := ix.Fuse(q, limit, s)
				if !reflect.DeepEqual(hits, wantHits) || !reflect.DeepEqual(unknown, wantUnknown) {
					t.Errorf("Fuse(%q, %d, %s) = %v, %v; want Search's %v, %v", query, limit, name, hits, unknown, wantHits, wantUnknown)
				}
			}
		}
		if len(q.Select) > 0 {
			want, _ := ix.Search(q, 5)
			if got, _ := ix.Fuse(q, 5, sims(ix, map[string]float64{"fs__read_file": 1})); !reflect.DeepEqual(got, want) {
				t.Errorf("Fuse(%q) = %v, want select's %v", query, got, want)
			}
		}
	}
}

// TestFuseSpread: in a catalog of many alike, only those that stand out are ranked by
// meaning, at most fuseDepth of them.
func TestFuseSpread(t *testing.T) {
	var docs []Doc
	for i := range 200 {
		docs = append(docs, Doc{Name: fmt.Sprintf("t%03d", i), Tool: "tool", Server: "s", Description: "Does things."})
	}
	ix := NewIndex(docs)
	q := mustQuery(t, "zzz")
	s := make([]float64, ix.Len())
	for i := range s {
		s[i] = 0.2 + 0.001*float64(i%7) // alike
	}
	s[10], s[20], s[30] = 0.9, 0.8, 0.7 // stand out
	hits, _ := ix.Fuse(q, 0, s)
	if got, want := names(hits), []string{docs[10].Name, docs[20].Name, docs[30].Name}; !reflect.DeepEqual(got, want) {
		t.Errorf("Fuse = %q, want %q", got, want)
	}
	for i := range s {
		s[i] = 0.5
	}
	s[0] = 0.5000001 // alike but for a hair: the nearest, alone
	if hits, _ := ix.Fuse(q, 0, s); len(hits) != 1 || hits[0].Name != docs[0].Name {
		t.Errorf("all alike: Fuse = %q, want only the nearest", names(hits))
	}
	for i := range s {
		s[i] = 0.1
	}
	for i := range 25 {
		s[i*2] = 0.9 // an eighth stand out: fuseDepth of them
	}
	if hits, _ := ix.Fuse(q, 0, s); len(hits) != fuseDepth {
		t.Errorf("many stand out: %d hits, want %d", len(hits), fuseDepth)
	}
}

func TestProse(t *testing.T) {
	tests := []struct{ query, want string }{
		{"create issue", "create issue"},
		{"server:github create issue", "create issue"},
		{"Server:github  +required   word", "required word"},
		{"+ alone", "alone"},
		{"server: empty name", "server: empty name"},
		{"lodge a complaint", "lodge a complaint"},
		{"发票 PDF 生成", "发票 PDF 生成"},
	}
	for _, tt := range tests {
		if got := mustQuery(t, tt.query).Prose(); got != tt.want {
			t.Errorf("ParseQuery(%q).Prose() = %q, want %q", tt.query, got, tt.want)
		}
	}
	if got := (Query{Terms: []string{"creat", "issu"}}).Prose(); got != "creat issu" {
		t.Errorf("a Query built by hand: Prose() = %q, want its terms", got)
	}
}
