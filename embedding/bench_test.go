package embedding_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/internal/embedtest"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// scaledDocs repeats the public catalogs under renamed servers until there are n docs.
func scaledDocs(b *testing.B, n int) []search.Doc {
	files, _ := filepath.Glob("../bench/catalogs/*.json")
	var base []search.Doc
	for _, f := range files {
		if strings.HasSuffix(f, "azure-all.json") {
			continue // an alternative view of azure
		}
		tools, err := upstream.LoadTools(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tools {
			base = append(base, search.Doc{Name: t.Server + "__" + t.Name, Tool: t.Name, Server: t.Server,
				Description: t.Description, Params: search.ParamsFromSchema(t.InputSchema)})
		}
	}
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
