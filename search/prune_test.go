package search

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// samePruned fails t unless pruned and full searches of q agree, hit for hit and bit for bit.
// It reports whether the pruned search scored fewer docs.
func samePruned(t *testing.T, ix *Index, q Query, text string, limit int) (pruned bool) {
	t.Helper()
	var fullStats, prunedStats searchStats
	full, _ := ix.search(q, limit, false, &fullStats)
	hits, _ := ix.search(q, limit, true, &prunedStats)
	if !reflect.DeepEqual(hits, full) {
		t.Errorf("Search(%q, %d) pruned =\n%v\nwant (every doc scored)\n%v", text, limit, hits, full)
	}
	return prunedStats.touched < fullStats.touched
}

// TestPruneSameHits ranks every query of every set in bench/, and variants of each with
// +required and server:, over the catalogs and over catalogs repeated to 10,000 and 50,000
// tools, pruned and not, at several limits: the hits must be identical.
func TestPruneSameHits(t *testing.T) {
	loadCJK(t)
	all := catalogDocs(t)
	cloud := readCatalog(t, "../bench/cloudledger/cloudledger.json", "cloudledger")
	indexes := []struct {
		name string
		docs []Doc
	}{
		{"catalogs", all},
		{"cloudledger", cloud},
		{"both", append(append([]Doc(nil), cloud...), all...)},
		{"10000", scaled(t, 10000)},
		{"10000-pooled", pooled(t, 10000)},
	}
	if !testing.Short() {
		indexes = append(indexes, struct {
			name string
			docs []Doc
		}{"50000", scaled(t, 50000)}, struct {
			name string
			docs []Doc
		}{"50000-pooled", pooled(t, 50000)})
	}
	var texts []string
	for _, f := range evalCaseFiles {
		cases, err := LoadCases(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			server, _, _ := strings.Cut(c.Want[0], "__")
			first, _, _ := strings.Cut(c.Query, " ")
			texts = append(texts, c.Query, "+"+c.Query, "server:"+server+" "+c.Query, "server:"+server+"0 "+c.Query,
				first+" +"+strings.TrimPrefix(c.Query, first+" "))
		}
	}
	texts = append(texts, "create issue", "crete isue", "+github search code", "server:slack send message",
		"azure key vault secret", "把发票再发一次", "list", "get", "+nothingmatches create", "a b c d e f g h i j k l m n o p q r s t u v w x y z",
		strings.Repeat("issue pull request ", 30))
	for _, in := range indexes {
		t.Run(in.name, func(t *testing.T) {
			ix := NewIndex(in.docs)
			// Over the scaled catalogs every fifth query, and no limit 0 (every doc scored
			// either way): the race detector makes the whole a matter of minutes.
			step, limits := 1, []int{1, 5, 8, 25, 0}
			if len(in.docs) >= 10000 {
				step, limits = 5, []int{1, 5, 25}
			}
			var searches, pruned int
			for i, text := range texts {
				if i%step != 0 {
					continue
				}
				q, err := ParseQuery(text)
				if err != nil {
					continue
				}
				for _, limit := range limits {
					if samePruned(t, ix, q, text, limit) && limit == 5 {
						pruned++
					}
				}
				searches++
			}
			// Guard the pruning itself, which no ranking shows: most searches for five
			// over thousands of tools must score fewer docs than every match.
			t.Logf("%d of %d searches for five scored fewer docs pruned", pruned, searches)
			// The pooled catalogs' servers of 2,000 tools are here for their hits: pruning
			// by server skips little there, their servers being copies of each other.
			if ix.Len() >= 10000 && !strings.HasSuffix(in.name, "-pooled") && pruned < searches*3/4 {
				t.Errorf("only %d of %d searches for five pruned", pruned, searches)
			}
		})
	}
}

// TestPruneRandom ranks random queries over random catalogs, pruned and not: synonyms,
// prefixes, typos, CJK words and their English, +required, server: in any case, the same
// tool on several servers (ties broken by name), docs given out of server order, and limits
// from 1 to 30, small servers and large. The hits must be identical.
func TestPruneRandom(t *testing.T) {
	loadCJK(t)
	words := strings.Fields(`create add new make insert get fetch read show list search find query
		delete remove update edit send post message channel issue issues repository repo repositories
		pull request branch commit file files page screenshot click user customer payment refund
		invoice email calendar event database table row key vault secret pod container log logs
		deploy release image web http server status report export import sync merge close open
		发票 退款 邮件 查询 删除 创建 文件 截图 日志 用户 仓库 分支 发送`)
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) string {
		var b []string
		for range n {
			b = append(b, words[r.IntN(len(words))])
		}
		return strings.Join(b, " ")
	}
	iterations := 200
	if testing.Short() {
		iterations = 40
	}
	var searches, pruned int
	defer func() { t.Logf("%d of %d searches scored fewer docs pruned", pruned, searches) }()
	for it := range iterations {
		var docs []Doc
		servers := 1 + r.IntN(12)
		for s := range servers {
			name := fmt.Sprintf("srv%c%d", 'a'+rune(r.IntN(3)), s)
			size := 1 + r.IntN(15)
			if r.IntN(8) == 0 { // a large server
				size = 1 + r.IntN(500)
			}
			for range size {
				tool := strings.ReplaceAll(pick(1+r.IntN(3)), " ", "_")
				d := Doc{Name: name + "__" + tool, Tool: tool, Server: name, Description: pick(r.IntN(12))}
				for range r.IntN(3) {
					d.Params = append(d.Params, Param{Name: pick(1), Description: pick(r.IntN(6))})
				}
				if r.IntN(8) == 0 {
					d.Keywords = []string{pick(1)}
				}
				docs = append(docs, d)
				if r.IntN(6) == 0 { // the same tool on another server, for ties
					other := fmt.Sprintf("srvz%d", r.IntN(3))
					docs = append(docs, Doc{Name: other + "__" + tool, Tool: tool, Server: other, Description: d.Description, Params: d.Params})
				}
			}
		}
		r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
		ix := NewIndex(docs)
		for range 40 {
			text := pick(1 + r.IntN(5))
			switch r.IntN(8) {
			case 0:
				text = "+" + pick(1) + " " + text
			case 1:
				text = "server:" + strings.ToUpper(docs[r.IntN(len(docs))].Server) + " " + text
			case 2: // a typo: a letter left out
				if w := pick(1); len(w) > 4 && w[0] < 0x80 {
					i := 1 + r.IntN(len(w)-2)
					text += " " + w[:i] + w[i+1:]
				}
			case 3: // a prefix
				if w := pick(1); len(w) > 5 && w[0] < 0x80 {
					text += " " + w[:4]
				}
			case 4:
				text = strings.ReplaceAll(text, " ", "")
			}
			q, err := ParseQuery(text)
			if err != nil {
				continue
			}
			searches++
			if samePruned(t, ix, q, fmt.Sprintf("%s (catalog %d)", text, it), 1+r.IntN(30)) {
				pruned++
			}
		}
		if t.Failed() {
			return
		}
	}
}

// FuzzPrune compares pruned and full searches of arbitrary queries over the public catalogs.
func FuzzPrune(f *testing.F) {
	for _, seed := range []string{"create issue", "crete isue", "+github search code", "server:SLACK send message",
		"azure key vault secret", "把发票再发一次", "open a PR from my feature branch into main", "repo", "发票 PDF",
		"list list list", "a.*+?^$[](){}|\\", "e\u0301"} {
		f.Add(seed, 5)
	}
	loadCJK(f)
	ix := NewIndex(catalogDocs(f))
	f.Fuzz(func(t *testing.T, query string, limit int) {
		q, err := ParseQuery(query)
		if err != nil {
			return
		}
		samePruned(t, ix, q, query, 1+abs(limit)%40)
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkSearchTouched reports how many docs a search scores, over every query of the
// evaluation sets, five results each: pruned, and without pruning (every doc that matches,
// as before pruning).
func BenchmarkSearchTouched(b *testing.B) {
	loadCJK(b)
	queries := evalQueries(b)
	for _, n := range benchSizes {
		for _, shape := range shapes {
			ix := NewIndex(shape.docs(b, n))
			for _, prune := range []bool{true, false} {
				b.Run(fmt.Sprintf("%d%s/prune=%v", n, shape.name, prune), func(b *testing.B) {
					var touched []int
					for b.Loop() {
						touched = touched[:0]
						for _, q := range queries {
							var st searchStats
							ix.search(q, 5, prune, &st)
							touched = append(touched, st.touched)
						}
					}
					slices.Sort(touched)
					var sum int
					for _, t := range touched {
						sum += t
					}
					mean := float64(sum) / float64(len(touched))
					b.ReportMetric(mean, "docs/query")
					b.ReportMetric(float64(touched[len(touched)/2]), "p50-docs")
					b.ReportMetric(float64(touched[len(touched)*99/100]), "p99-docs")
					b.ReportMetric(100*mean/float64(ix.Len()), "%-of-catalog")
				})
			}
		}
	}
}

// TestSearchConcurrent searches one index from several goroutines at once, each search with
// its own scratch: the hits are those of searching alone.
func TestSearchConcurrent(t *testing.T) {
	loadCJK(t)
	ix := NewIndex(catalogDocs(t))
	queries := evalQueries(t)[:60]
	want := make([][]Hit, len(queries))
	for i, q := range queries {
		want[i], _ = ix.Search(q, 5)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range queries {
				i = (i + g*15) % len(queries)
				if got, _ := ix.Search(queries[i], 5); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("Search(%q) concurrently = %v, want %v", queries[i].text, got, want[i])
				}
			}
		})
	}
	wg.Wait()
}

// TestMergedShares holds each merged term's shares, which searches score in place of its
// expansions, to what scoring the expansions gives, to the bit, and its runs to
// appendRuns', over the public catalogs and random ones.
func TestMergedShares(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("create creates new add get fetch list lists listing repo repository repositories issue issues search find query message messages send post")
	catalogs := [][]Doc{catalogDocs(t)}
	for range 20 {
		var docs []Doc
		for i := range 1 + r.IntN(300) {
			pick := func() string { return words[r.IntN(len(words))] }
			srv := fmt.Sprintf("s%d", r.IntN(5))
			tool := pick() + "_" + pick()
			docs = append(docs, Doc{Name: fmt.Sprintf("%s__%s%d", srv, tool, i), Tool: tool, Server: srv,
				Description: pick() + " " + pick() + " " + pick()})
		}
		catalogs = append(catalogs, docs)
	}
	for ci, docs := range catalogs {
		ix := NewIndex(docs)
		merged := 0
		for term, td := range ix.terms {
			if td.merged == nil {
				continue
			}
			merged++
			// plan uses the merged list whatever the word as written: a typo of it, or the
			// word before stemming, must not change an index term's expansions.
			exps := ix.termExpansions(term, term)
			for _, raw := range []string{term + "s", term[:len(term)-1], "x" + term} {
				if other := ix.termExpansions(term, raw); !reflect.DeepEqual(other, exps) {
					t.Fatalf("catalog %d, %q: expansions for the word %q differ: %v, merged %v", ci, term, raw, other, exps)
				}
			}
			q, _ := ix.qterm(exps, nil)
			sc := ix.getScratch()
			sc.add(q) // scores the expansions: q is not the merged term
			if len(sc.touched) != len(td.merged.docs) {
				t.Fatalf("catalog %d, %q: merged %d docs, expansions match %d", ci, term, len(td.merged.docs), len(sc.touched))
			}
			for i, d := range td.merged.docs {
				if got, want := td.merged.shares[i], sc.acc[d].score; math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("catalog %d, %q, doc %d: merged share %v, expansions give %v", ci, term, d, got, want)
				}
			}
			sc.reset(ix)
			ix.putScratch(sc)
			m := td.merged
			if want := ix.appendRuns(nil, len(m.docs), func(i int) (int32, float64) { return m.docs[i], m.shares[i] }); !reflect.DeepEqual(m.runs, want) {
				t.Fatalf("catalog %d, %q: runs %v, want %v", ci, term, m.runs, want)
			}
		}
		if ci == 0 && merged < 100 {
			t.Errorf("only %d merged terms over the catalogs", merged)
		}
	}
}
