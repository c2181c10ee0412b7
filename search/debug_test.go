package search

import (
	"sort"
	"testing"
)

func BenchmarkDebugTail(b *testing.B) {
	loadCJK(b)
	queries := evalQueries(b)
	ix := NewIndex(scaled(b, 50000))
	type qt struct {
		q Query
		n int
	}
	var qs []qt
	for _, q := range queries {
		var st searchStats
		ix.search(q, 5, true, &st)
		qs = append(qs, qt{q, st.touched})
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].n > qs[j].n })
	qs = qs[:20]
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ix.search(qs[i%len(qs)].q, 5, true, nil)
		i++
	}
}
