package search

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// plainBM25 is the baseline the ranker is measured against: one bag of words per tool (name,
// description, parameters), words split on anything but letters and digits and lower-cased,
// CJK as two-character pairs, BM25 with k1 1.2 and b 0.75. No stemming, synonyms, typo
// tolerance or field weights.
type plainBM25 struct {
	docs     []Doc
	byName   map[string]int
	postings map[string][]struct {
		doc int
		tf  float64
	}
	lens []float64
	avg  float64
}

func plainTokens(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isAlnum(r) }) {
		rs := []rune(w)
		if isCJK(rs[0]) {
			if len(rs) == 1 {
				out = append(out, w)
			}
			for i := 0; i+1 < len(rs); i++ {
				out = append(out, string(rs[i:i+2]))
			}
			continue
		}
		out = append(out, strings.ToLower(w))
	}
	return out
}

func newPlainBM25(docs []Doc) *plainBM25 {
	p := &plainBM25{docs: docs, byName: map[string]int{}, postings: map[string][]struct {
		doc int
		tf  float64
	}{}}
	var total float64
	for i, d := range docs {
		p.byName[d.Name] = i
		text := strings.ReplaceAll(d.Tool, "_", " ") + " " + d.Description
		for _, prm := range d.Params {
			text += " " + prm.Name + " " + prm.Description
		}
		toks := plainTokens(text)
		tf := map[string]float64{}
		for _, t := range toks {
			tf[t]++
		}
		for t, n := range tf {
			p.postings[t] = append(p.postings[t], struct {
				doc int
				tf  float64
			}{i, n})
		}
		p.lens = append(p.lens, float64(len(toks)))
		total += float64(len(toks))
	}
	p.avg = total / float64(len(docs))
	return p
}

func (p *plainBM25) Doc(name string) (Doc, bool) {
	i, ok := p.byName[name]
	if !ok {
		return Doc{}, false
	}
	return p.docs[i], true
}

func (p *plainBM25) Search(q Query, limit int) ([]Hit, []string) {
	scores := map[int]float64{}
	n := float64(len(p.docs))
	for _, t := range plainTokens(q.text) {
		ps := p.postings[t]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, ps := range ps {
			norm := 1 - 0.75 + 0.75*p.lens[ps.doc]/p.avg
			scores[ps.doc] += idf * ps.tf * 2.2 / (ps.tf + 1.2*norm)
		}
	}
	var hits []Hit
	for d, s := range scores {
		hits = append(hits, Hit{Name: p.docs[d].Name, Score: s})
	}
	sort.Slice(hits, func(i, j int) bool { return better(hits[i], hits[j]) })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// evalSet is a labelled set and the recall the ranker must reach on it.
type evalSet struct {
	name    string
	cases   string
	catalog []Doc
	floors  map[int]float64
}

func evalSets(t *testing.T) []evalSet {
	all := catalogDocs(t)
	cloud := readCatalog(t, "../bench/cloudledger/cloudledger.json", "cloudledger")
	return []evalSet{
		{"cloudledger (zh, 60 tools)", "../bench/cloudledger/cases.yaml", cloud, map[int]float64{1: 0.70, 5: 0.90}},
		{"bench/en.yaml (1,142 tools)", "../bench/en.yaml", all, map[int]float64{5: 0.90}},
		{"bench/en-holdout.yaml (1,142 tools)", "../bench/en-holdout.yaml", all, map[int]float64{5: 0.85}},
		{"bench/zh.yaml (1,142 tools)", "../bench/zh.yaml", all, map[int]float64{1: 0.70, 5: 0.90}},
		// Held out: written blind to the tuning, never tuned on; floors a little under today.
		{"bench/zh-holdout.yaml (1,142 tools)", "../bench/zh-holdout.yaml", all, map[int]float64{5: 0.80}},
		{"bench/en-paraphrase.yaml (1,142 tools)", "../bench/en-paraphrase.yaml", all, map[int]float64{5: 0.30}},
	}
}

// TestRecall measures the ranker and plain BM25 on every public set, prints the table the
// docs/search.md shows, and fails if the ranker falls below its floors or below plain BM25.
func TestRecall(t *testing.T) {
	ks := []int{1, 3, 5}
	var table strings.Builder
	table.WriteString("| set | ranker | recall@1 | recall@3 | recall@5 | MRR |\n|---|---|--:|--:|--:|--:|\n")
	for _, set := range evalSets(t) {
		cases, err := LoadCases(set.cases)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := Evaluate(NewIndex(set.catalog), cases, ks)
		if err != nil {
			t.Fatalf("%s: %v", set.name, err)
		}
		plain, err := Evaluate(newPlainBM25(set.catalog), cases, ks)
		if err != nil {
			t.Fatalf("%s: %v", set.name, err)
		}
		for _, r := range []struct {
			name string
			rep  Report
		}{{"plain BM25", plain}, {"toolsift", ours}} {
			fmt.Fprintf(&table, "| %s, %d cases | %s | %.2f | %.2f | %.2f | %.2f |\n",
				set.name, r.rep.Cases, r.name, r.rep.Recall[1], r.rep.Recall[3], r.rep.Recall[5], r.rep.MRR)
		}
		for k, floor := range set.floors {
			if ours.Recall[k] < floor {
				t.Errorf("%s: recall@%d = %.3f, below %.2f", set.name, k, ours.Recall[k], floor)
			}
		}
		if ours.Recall[5] < plain.Recall[5] || ours.MRR < plain.MRR {
			t.Errorf("%s: ranker (r@5 %.3f, MRR %.3f) is not better than plain BM25 (r@5 %.3f, MRR %.3f)",
				set.name, ours.Recall[5], ours.MRR, plain.Recall[5], plain.MRR)
		}
	}
	t.Logf("\n%s", table.String())
	if out := os.Getenv("TOOLSIFT_RECALL_TABLE"); out != "" {
		os.WriteFile(filepath.Clean(out), []byte(table.String()), 0o644)
	}
}

func TestEvaluate(t *testing.T) {
	ix := NewIndex([]Doc{
		{Name: "a__send_email", Tool: "send_email", Server: "a", Description: "Send an email"},
		{Name: "a__read_email", Tool: "read_email", Server: "a", Description: "Read an email"},
		{Name: "b__post_message", Tool: "post_message", Server: "b", Description: "Post a chat message"},
	})
	rep, err := Evaluate(ix, []Case{
		{Query: "send email", Want: []string{"a__send_email"}},
		{Query: "read email", Want: []string{"a__send_email", "a__read_email"}}, // either
		{Query: "zebra", Want: []string{"b__post_message"}},                     // never ranked
	}, []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cases != 3 || math.Abs(rep.Recall[1]-2.0/3) > 1e-9 || math.Abs(rep.Recall[3]-2.0/3) > 1e-9 {
		t.Errorf("report = %+v", rep)
	}
	if math.Abs(rep.MRR-2.0/3) > 1e-9 {
		t.Errorf("MRR = %v, want 2/3", rep.MRR)
	}
	if len(rep.Misses) != 1 || rep.Misses[0].Query != "zebra" || rep.Misses[0].Rank != 0 {
		t.Errorf("misses = %+v", rep.Misses)
	}
	for _, bad := range [][]Case{
		{{Query: "x", Want: []string{"nope__tool"}}},
		{{Query: "x"}},
		{{Query: "", Want: []string{"a__send_email"}}},
		nil,
	} {
		if _, err := Evaluate(ix, bad, []int{1}); err == nil {
			t.Errorf("Evaluate(%+v) = nil error", bad)
		}
	}
}

func TestLoadCases(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	good := write("good.yaml", "- query: send mail\n  want: a__send\n- query: \"发票\"\n  want: [a__x, b__y]\n")
	cases, err := LoadCases(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 || len(cases[1].Want) != 2 || cases[1].Query != "发票" {
		t.Errorf("cases = %+v", cases)
	}
	for name, text := range map[string]string{
		"notlist.yaml":  "query: x\nwant: y\n",
		"nowant.yaml":   "- query: x\n",
		"mapwant.yaml":  "- query: x\n  want: {a: b}\n",
		"noquery.yaml":  "- want: a__b\n",
		"badyaml.yaml":  "- query: [\n",
		"nestwant.yaml": "- query: x\n  want: [[a]]\n",
	} {
		if _, err := LoadCases(write(name, text)); err == nil {
			t.Errorf("LoadCases(%s) = nil error", name)
		}
	}
	if _, err := LoadCases(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("LoadCases(missing) = nil error")
	}
}
