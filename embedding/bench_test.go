package embedding_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/internal/embedtest"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// catalogDocs reads the public catalogs, as bench/en.yaml names their tools.
func catalogDocs(b *testing.B) []search.Doc {
	files, _ := filepath.Glob("../bench/catalogs/*.json")
	var docs []search.Doc
	for _, f := range files {
		if strings.HasSuffix(f, "azure-all.json") {
			continue // an alternative view of azure
		}
		tools, err := upstream.LoadTools(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tools {
			docs = append(docs, search.Doc{Name: t.Server + "__" + t.Name, Tool: t.Name, Server: t.Server,
				Description: t.Description, Params: search.ParamsFromSchema(t.InputSchema)})
		}
	}
	return docs
}

// scaledDocs repeats the public catalogs under renamed servers until there are n docs.
func scaledDocs(b *testing.B, n int) []search.Doc {
	base := catalogDocs(b)
	var docs []search.Doc
	for copy := 0; len(docs) < n; copy++ {
		for _, d := range base[:min(len(base), n-len(docs))] {
			d.Server = fmt.Sprintf("%s%d", d.Server, copy)
			d.Name = d.Server + "__" + d.Tool
			docs = append(docs, d)
		}
	}
	return docs
}

// BenchmarkHybridSearch measures a search by words and meaning, the query's vector from a
// fake API on loopback, with vectors of 768 dimensions (the width of common local models),
// beside the search by words alone.
func BenchmarkHybridSearch(b *testing.B) {
	queries := []string{"create issue", "take a screenshot of the page", "lodge a complaint", "+github search code", "server:slack0 send message"}
	for _, n := range []int{1000, 10000} {
		docs := scaledDocs(b, n)
		api := embedtest.New(b)
		api.Dim = 768
		e := embedding.New(embedding.Options{URL: api.Base(), Model: "fake", BatchSize: 512, Timeout: 5 * time.Second})
		e.Track(docs)
		if err := e.Wait(context.Background()); err != nil {
			b.Fatal(err)
		}
		ix := search.NewIndex(docs)
		h := e.Hybrid(ix)
		var qs []search.Query
		for _, s := range queries {
			q, err := search.ParseQuery(s)
			if err != nil {
				b.Fatal(err)
			}
			qs = append(qs, q)
		}
		b.Run(fmt.Sprintf("hybrid/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.Search(qs[i%len(qs)], 5)
				i++
			}
			if failures, err := e.QueryFailures(); failures > 0 {
				b.Fatalf("%d searches by words alone: %v", failures, err)
			}
		})
		b.Run(fmt.Sprintf("words/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ix.Search(qs[i%len(qs)], 5)
				i++
			}
		})
		e.Close()
	}
}

// BenchmarkFusionWeakModel measures what fusion costs with a model weaker than the words:
// a stand-in that embeds TF-IDF weights of crudely stemmed words, hashed into 1,024
// dimensions, with no synonyms. It reports recall@1 and @5 on bench/en.yaml and
// en-holdout.yaml, by words alone and fused; the fusion constants in search/fuse.go cite
// it. A real model is to be measured with toolsift eval.
func BenchmarkFusionWeakModel(b *testing.B) {
	docs := catalogDocs(b)
	words := func(s string) []string {
		var out []string
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len(w) > 2 && w != "the" && w != "and" && w != "for" && w != "with" && w != "from" && w != "this" && w != "that" {
				out = append(out, w[:min(len(w), 5)])
			}
		}
		return out
	}
	df := map[string]float64{}
	for _, d := range docs {
		seen := map[string]bool{}
		for _, w := range words(embedding.Text(d)) {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	vector := func(s string) []float32 {
		v := make([]float32, 1024)
		v[0] = 0.01
		for _, w := range words(s) {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[1+h.Sum32()%1023] += float32(math.Log(1 + float64(len(docs))/(1+df[w])))
		}
		return v
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		json.NewDecoder(r.Body).Decode(&req)
		type datum struct {
			Embedding []float32 `json:"embedding"`
			Index     int       `json:"index"`
		}
		var out struct {
			Data []datum `json:"data"`
		}
		for i, in := range req.Input {
			out.Data = append(out.Data, datum{vector(in), i})
		}
		json.NewEncoder(w).Encode(out)
	}))
	defer api.Close()
	e := embedding.New(embedding.Options{URL: api.URL, Model: "tf-idf", BatchSize: 512, Timeout: 5 * time.Second, AlwaysAsk: true})
	defer e.Close()
	e.Track(docs)
	if err := e.Wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	ix := search.NewIndex(docs)
	for b.Loop() {
		for _, f := range []string{"en", "en-holdout"} {
			cases, err := search.LoadCases("../bench/" + f + ".yaml")
			if err != nil {
				b.Fatal(err)
			}
			for name, r := range map[string]search.Ranker{"words": ix, "fused": e.Hybrid(ix)} {
				rep, err := search.Evaluate(r, cases, []int{1, 5})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(rep.Recall[1], f+"-"+name+"-r@1")
				b.ReportMetric(rep.Recall[5], f+"-"+name+"-r@5")
			}
		}
	}
}
