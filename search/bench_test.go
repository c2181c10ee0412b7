package search

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/cputime"
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

// pooled is the public catalogs repeated to n docs as the end-to-end benchmarks serve them:
// each tool's name starts with its catalog's, copies after the first end in _r and their
// round, and servers s00, s01… hold 2,000 tools each.
func pooled(b testing.TB, n int) []Doc {
	base := catalogDocs(b)
	docs := make([]Doc, 0, n)
	for i := range n {
		d := base[i%len(base)]
		d.Tool = d.Server + "_" + d.Tool
		if round := i / len(base); round > 0 {
			d.Tool += fmt.Sprintf("_r%d", round)
		}
		d.Server = fmt.Sprintf("s%02d", i/2000)
		d.Name = d.Server + "__" + d.Tool
		docs = append(docs, d)
	}
	return docs
}

// shapes are the ways the benchmarks repeat the catalogs: as servers of their own size, and
// pooled into servers of 2,000.
var shapes = []struct {
	name string
	docs func(testing.TB, int) []Doc
}{{"", scaled}, {"-pooled", pooled}}

// benchSizes are the catalog sizes the benchmarks measure: about the public catalogs' 1,142
// tools, and ten and fifty thousand, as a gateway in front of a company's servers may hold.
var benchSizes = []int{1000, 10000, 50000}

func BenchmarkIndexBuild(b *testing.B) {
	for _, n := range benchSizes {
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
	for _, n := range benchSizes {
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

// evalQueries parses the query of every case of every set in bench/.
func evalQueries(tb testing.TB) []Query {
	tb.Helper()
	return caseQueries(tb, evalCaseFiles...)
}

// caseQueries parses the query of every case in files.
func caseQueries(tb testing.TB, files ...string) []Query {
	tb.Helper()
	var queries []Query
	for _, f := range files {
		cases, err := LoadCases(f)
		if err != nil {
			tb.Fatal(err)
		}
		for _, c := range cases {
			q, err := ParseQuery(c.Query)
			if err != nil {
				tb.Fatal(err)
			}
			queries = append(queries, q)
		}
	}
	return queries
}

var evalCaseFiles = []string{"../bench/en.yaml", "../bench/en-holdout.yaml", "../bench/en-paraphrase.yaml",
	"../bench/zh.yaml", "../bench/zh-holdout.yaml", "../bench/cloudledger/cases.yaml"}

// BenchmarkSearchLatency runs every query of the evaluation sets, five results each as
// tool_search asks by default, in turn, and reports latency percentiles per query, since a
// mean hides the slow queries: by the wall clock, and by the CPU time the process used,
// which other processes on a shared machine disturb less.
func BenchmarkSearchLatency(b *testing.B) {
	loadCJK(b)
	queries := evalQueries(b)
	for _, n := range benchSizes {
		for _, shape := range shapes {
			ix := NewIndex(shape.docs(b, n))
			b.Run(fmt.Sprint(n)+shape.name, func(b *testing.B) {
				var wall, cpu []time.Duration
				i := 0
				for b.Loop() {
					start, startCPU := time.Now(), cputime.Self()
					ix.Search(queries[i%len(queries)], 5)
					cpu = append(cpu, cputime.Self()-startCPU)
					wall = append(wall, time.Since(start))
					i++
				}
				report := func(lat []time.Duration, unit string) {
					slices.Sort(lat)
					pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Nanoseconds()) / 1e3 }
					b.ReportMetric(pct(0.50), "p50-"+unit)
					b.ReportMetric(pct(0.99), "p99-"+unit)
				}
				report(wall, "µs")
				b.ReportMetric(float64(slices.Max(wall).Nanoseconds())/1e3, "max-µs")
				if cpu[0] > 0 || cpu[len(cpu)-1] > 0 {
					report(cpu, "cpu-µs")
				}
			})
		}
	}
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
	for _, n := range benchSizes {
		for _, shape := range shapes {
			ix := NewIndex(shape.docs(b, n))
			b.Run(fmt.Sprint(n)+shape.name, func(b *testing.B) {
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
}

// loadCJK reads the Chinese table before a benchmark's clock starts, so that the first
// Chinese query does not carry it.
func loadCJK(b testing.TB) {
	if err := cjk.Load(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkIndexMemory reports the heap an index holds per tool.
func BenchmarkIndexMemory(b *testing.B) {
	for _, n := range benchSizes {
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

// BenchmarkSearchAfterWait runs each query of the evaluation sets after a 100 µs sleep, as
// a server over stdio searches right after waiting on its pipe, and then at once again, and
// reports the median and p99 of both: what a search costs as the first work after a wait,
// which the back-to-back searches of BenchmarkSearchLatency never are.
func BenchmarkSearchAfterWait(b *testing.B) {
	loadCJK(b)
	queries := evalQueries(b)
	for _, n := range []int{10000, 50000} {
		ix := NewIndex(pooled(b, n))
		b.Run(fmt.Sprintf("%d-pooled", n), func(b *testing.B) {
			var first, again []time.Duration
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				time.Sleep(100 * time.Microsecond)
				start := time.Now()
				ix.Search(q, 5)
				mid := time.Now()
				ix.Search(q, 5)
				first, again = append(first, mid.Sub(start)), append(again, time.Since(mid))
				i++
			}
			for _, m := range []struct {
				name string
				lat  []time.Duration
			}{{"after-wait", first}, {"again", again}} {
				slices.Sort(m.lat)
				b.ReportMetric(float64(m.lat[len(m.lat)/2].Nanoseconds())/1e3, m.name+"-p50-µs")
				b.ReportMetric(float64(m.lat[len(m.lat)*99/100].Nanoseconds())/1e3, m.name+"-p99-µs")
			}
		})
	}
}

// BenchmarkPossessive ranks 50,000 pooled tools for a request with a possessive, and for
// the same request with the s as a word of its own, as the possessive used to give it: the
// name of every pooled tool's server (s00, s01…) holds that word.
func BenchmarkPossessive(b *testing.B) {
	ix := NewIndex(pooled(b, 50000))
	for _, c := range []struct{ name, query string }{
		{"possessive", "what's assigned to me in asana"},
		{"s-word", "what s assigned to me in asana"},
	} {
		q, err := ParseQuery(c.query)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				ix.Search(q, 5)
			}
		})
	}
}
