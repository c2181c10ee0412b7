package search

import (
	"fmt"
	"testing"
)

// scaled repeats the public catalogs under renamed servers until there are at least n docs.
func scaled(b *testing.B, n int) []Doc {
	base := catalogDocs(b)
	var docs []Doc
	for copy := 0; len(docs) < n; copy++ {
		for _, d := range base {
			if len(docs) == n {
				break
			}
			d.Server = fmt.Sprintf("%s%d", d.Server, copy)
			d.Name = d.Server + "__" + d.Tool
			docs = append(docs, d)
		}
	}
	return docs
}

func BenchmarkIndexBuild(b *testing.B) {
	for _, n := range []int{1142, 10000} {
		docs := scaled(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				NewIndex(docs)
			}
		})
	}
}

func BenchmarkSearch(b *testing.B) {
	queries := []string{"create issue", "take a screenshot of the page", "crete isue", "+github search code", "发票 PDF"}
	for _, n := range []int{1142, 10000} {
		ix := NewIndex(scaled(b, n))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q, _ := ParseQuery(queries[i%len(queries)])
				ix.Search(q, 5)
				i++
			}
		})
	}
}
