package search

import (
	"math"
	"sort"
	"strings"
)

// Reciprocal-rank fusion (Cormack, Clarke and Büttcher, SIGIR 2009) of the ranking by words
// and a ranking by meaning: a tool scores weight/(fuseK+rank) in each ranking it is in, and
// the sums rank. Ranks, not scores, are fused because BM25 scores and cosines share no scale,
// and a cosine's scale differs from one embedding model to the next.
const (
	// fuseK is 10, not the paper's 60. It sets how much a first place is worth over a tenth:
	// at 60 the two differ by 15%, so a tool ranked 20th by both rankings would outrank
	// the tool the words put first; at 10 they differ by almost half, and a tool needs to
	// be in about the top ten of both (1.8/(10+r) > 1/11 for r < 10) to pass the first by
	// words.
	// tool_search shows five results, so the top of each ranking is what counts; and at
	// 60 a weak model cost more (see fuseMeaningWeight).
	fuseK = 10
	// fuseMeaningWeight is 0.8 of fuseWordWeight. The word ranker is tuned on bench/
	// (recall@5 0.91 on en.yaml) and knows names, typos and synonyms; the model is whatever
	// the user configured. At 0.8 the first by meaning still ranks among the five shown when
	// the other ranking does not agree ((k+1)/0.8-k = 3.75: behind at most three tools found
	// by words alone), and a model weaker than the words costs less. Measured with a TF-IDF
	// stand-in for a weak model (BenchmarkFusionWeakModel in embedding), recall@5 on
	// en.yaml is 0.851 at 0.8, 0.823 at 1, 0.777 at 1 with k 60 (words alone: 0.909). A
	// model better than the words earns its place by agreeing with them: a tool near the
	// top of both rankings passes the first of either.
	fuseWordWeight    = 1.0
	fuseMeaningWeight = 0.8
	// fuseDepth bounds the ranking by meaning: past twenty, a tool earns less than a third
	// of the first's share, and a query about issues has no more than twenty tools about
	// issues worth showing.
	fuseDepth = 20
	// fuseSpread keeps in the ranking by meaning only the tools whose similarity to the
	// query is at least this many standard deviations above the mean of the tools the query
	// admits (the nearest always stays). Every tool has some cosine to every query, and in a
	// catalog of thirty the twentieth nearest means nothing; yet it would gain a second
	// share for also sharing a word, and pass a better match found by one ranking alone. A
	// spread, not a floor, because each model has its own scale of cosines. A group of
	// tools equally near, among others equally far, stands sqrt((1-p)/p) deviations out
	// when it is a share p of them: at 1.5 it is kept while it is under 30% of them (the
	// three issue tools among ten of server:github), at 2 only under 20%.
	fuseSpread = 1.5
)

// Docs returns the indexed documents in index order, the order of the similarities Fuse
// takes. The caller must not modify them.
func (ix *Index) Docs() []Doc { return ix.docs }

// Fuse ranks the index for q as Search does, fused with a ranking by meaning, and returns
// at most limit hits (all for limit 0), best first; a hit's Score is its fused score.
// similarity holds each document's closeness to the query, in the order of Docs, typically
// the cosine of their embeddings; NaN marks one that has none yet, which only the words rank.
// A similarity of another length than Docs is ignored, and the words alone rank.
//
// The query forms keep their meaning: select: names tools as Search does, unfused;
// server:NAME and +required words admit to the ranking by meaning the tools they admit to
// the ranking by words.
func (ix *Index) Fuse(q Query, limit int, similarity []float64) (hits []Hit, unknown []string) {
	if len(q.Select) > 0 || len(similarity) != len(ix.docs) {
		return ix.Search(q, limit)
	}
	words, unknown := ix.Search(q, 0)
	meaning := ix.nearest(q, similarity)
	if len(meaning) == 0 {
		if limit > 0 && len(words) > limit {
			words = words[:limit]
		}
		return words, unknown
	}
	type fused struct {
		score float64
		word  int // rank by words, from 1; 0 when not ranked by words
	}
	byName := make(map[string]*fused, len(words)+len(meaning))
	for i, h := range words {
		byName[h.Name] = &fused{score: fuseWordWeight / float64(fuseK+i+1), word: i + 1}
	}
	for i, d := range meaning {
		name := ix.docs[d].Name
		f := byName[name]
		if f == nil {
			f = &fused{}
			byName[name] = f
		}
		f.score += fuseMeaningWeight / float64(fuseK+i+1)
	}
	hits = make([]Hit, 0, len(byName))
	for name, f := range byName {
		hits = append(hits, Hit{Name: name, Score: f.score})
	}
	// Ties go to the better rank by words, which matched what the query spelled out, then
	// to the name, so that a ranking never depends on map order.
	wordRank := func(h Hit) int {
		if r := byName[h.Name].word; r > 0 {
			return r
		}
		return math.MaxInt
	}
	sort.Slice(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ra, rb := wordRank(a), wordRank(b); ra != rb {
			return ra < rb
		}
		return a.Name < b.Name
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, unknown
}

// nearest returns the ranking by meaning: the documents q admits that have a similarity,
// nearest first, cut to fuseDepth and to those fuseSpread deviations above the mean.
func (ix *Index) nearest(q Query, similarity []float64) []int32 {
	admits := func(d int) bool {
		s := similarity[d]
		return !math.IsNaN(s) && !math.IsInf(s, 0) &&
			(q.Server == "" || strings.EqualFold(ix.docs[d].Server, q.Server)) && ix.hasAll(ix.idOf[d], q.Required)
	}
	var n, sum, sumSq float64
	for d, s := range similarity {
		if admits(d) {
			n++
			sum += s
			sumSq += s * s
		}
	}
	if n == 0 {
		return nil
	}
	mean := sum / n
	floor := mean + fuseSpread*math.Sqrt(max(sumSq/n-mean*mean, 0))
	closer := func(a, b int32) bool {
		if sa, sb := similarity[a], similarity[b]; sa != sb {
			return sa > sb
		}
		return ix.docs[a].Name < ix.docs[b].Name
	}
	// The nearest always; the others only above the floor. Kept sorted, at most fuseDepth.
	top := make([]int32, 0, fuseDepth)
	for d := range similarity {
		id := int32(d)
		if !admits(d) || len(top) == fuseDepth && !closer(id, top[len(top)-1]) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return closer(id, top[i]) })
		if len(top) < fuseDepth {
			top = append(top, 0)
		}
		copy(top[i+1:], top[i:])
		top[i] = id
	}
	keep := 1
	for keep < len(top) && similarity[top[keep]] >= floor {
		keep++
	}
	return top[:keep]
}

// Prose returns the query as written, less its operators (server:NAME, and the + of
// required words): the text to find tools near in meaning. A Query not made by ParseQuery
// gives its terms.
func (q Query) Prose() string {
	if q.text == "" {
		return strings.Join(q.Terms, " ")
	}
	var words []string
	for _, f := range strings.Fields(q.text) {
		if name, ok := cutPrefixFold(f, "server:"); ok && name != "" {
			continue
		}
		if f = strings.TrimPrefix(f, "+"); f != "" {
			words = append(words, f)
		}
	}
	return strings.Join(words, " ")
}
