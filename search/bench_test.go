package search

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/toolsift/toolsift/search/cjk"
)

// scaled repeats the public catalogs under renamed servers until there are at least n docs.
func scaled(b testing.TB, n int) []Doc {
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
	loadCJK(b)
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

// BenchmarkSearchLatency runs every query of the evaluation sets against 10,000 tools and
// reports latency percentiles, since a mean hides the slow queries.
func BenchmarkSearchLatency(b *testing.B) {
	loadCJK(b)
	ix := NewIndex(scaled(b, 10000))
	var queries []Query
	for _, f := range []string{"../bench/en.yaml", "../bench/en-holdout.yaml", "../bench/cloudledger/cases.yaml"} {
		cases, err := LoadCases(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cases {
			q, err := ParseQuery(c.Query)
			if err != nil {
				b.Fatal(err)
			}
			queries = append(queries, q)
		}
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		ix.Search(queries[i%len(queries)], 5)
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// BenchmarkSearchChinese parses and ranks each request of bench/zh.yaml, Chinese over tools
// described in English, so each word goes through its English. The table is loaded first:
// cjk's BenchmarkLoad measures that.
func BenchmarkSearchChinese(b *testing.B) {
	loadCJK(b)
	cases, err := LoadCases("../bench/zh.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1142, 10000} {
		ix := NewIndex(scaled(b, n))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q, _ := ParseQuery(cases[i%len(cases)].Query)
				ix.Search(q, 5)
				i++
			}
		})
	}
}

// loadCJK reads the Chinese table before a benchmark's clock starts, so that the first
// Chinese query does not carry it.
func loadCJK(b *testing.B) {
	if err := cjk.Load(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIndexMemory reports the heap an index holds per tool.
func BenchmarkIndexMemory(b *testing.B) {
	for _, n := range []int{1142, 10000} {
		docs := scaled(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var ix *Index
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				ix = NewIndex(docs)
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "bytes/tool")
			}
			runtime.KeepAlive(ix)
		})
	}
}
