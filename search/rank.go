package search

import (
	"sort"
	"strings"
)

// scratch holds one search's per-doc accumulators; its methods are the ranking: add adds
// one query term's BM25F to the docs it matches, rank orders the docs touched. Arrays
// indexed by doc, reused through a pool, keep a query at 10,000 tools free of map traffic;
// only the docs a query touched are reset afterwards.
type scratch struct {
	score   []float64
	matched []uint16 // how many query terms each doc matched
	touched []int32  // docs with a score, to rank and to reset

	// Per term: the best expansion's value and the sum of all, for the docs in termDocs.
	best, total []float64
	termGen     []uint32
	gen         uint32
	termDocs    []int32

	// Per server: its three best scores, for the server prior.
	top [][3]float64

	pruneScratch // for topK
}

func (ix *Index) getScratch() *scratch {
	if sc := ix.spare.Swap(nil); sc != nil {
		return sc
	}
	if sc, ok := ix.scratch.Get().(*scratch); ok {
		return sc
	}
	n := len(ix.docs)
	return &scratch{
		score: make([]float64, n), matched: make([]uint16, n),
		best: make([]float64, n), total: make([]float64, n), termGen: make([]uint32, n),
		top: make([][3]float64, len(ix.servers)),
	}
}

func (ix *Index) putScratch(sc *scratch) {
	if !ix.spare.CompareAndSwap(nil, sc) {
		ix.scratch.Put(sc)
	}
}

// add scores one query term into the accumulators. A term counts once per doc: its best
// expansion, plus expansionTail of the others.
func (sc *scratch) add(t qterm) {
	sc.gen++
	sc.termDocs = sc.termDocs[:0]
	for _, e := range t.expansions {
		for _, p := range e.postings {
			d := p.doc
			if t.skip != nil && t.skip[d] {
				continue
			}
			if sc.termGen[d] != sc.gen {
				sc.termGen[d] = sc.gen
				sc.best[d], sc.total[d] = 0, 0
				sc.termDocs = append(sc.termDocs, d)
			}
			v := float64(float64(p.base) * e.w)
			sc.total[d] += v
			sc.best[d] = max(sc.best[d], v)
		}
	}
	for _, d := range sc.termDocs {
		if sc.matched[d] == 0 {
			sc.touched = append(sc.touched, d)
		}
		sc.matched[d]++
		sc.score[d] += share(sc.best[d], sc.total[d])
	}
}

// rank applies coordination and the server prior, filters, and returns the best limit
// hits (all of them for limit 0), leaving the scratch clean for the next search.
func (sc *scratch) rank(ix *Index, q Query, known, limit int) []Hit {
	defer sc.reset(ix)
	// coord[m] scales the score of a doc that matched m of the known terms.
	coord := coordTable(known)
	for _, d := range sc.touched {
		sc.score[d] *= coord[min(int(sc.matched[d]), known)]
		top3(&sc.top[ix.serverOf[d]], sc.score[d])
	}
	// The server prior: a query about pods and namespaces is about Kubernetes, so
	// kubectl_get should rank above a lone match of "staging" among another server's
	// release stages. A server's strength is the sum of its three best scores; each tool
	// gains up to serverPrior of its score, in proportion to its server's strength against
	// the strongest's.
	var strongest float64
	for _, d := range sc.touched {
		t := sc.top[ix.serverOf[d]]
		strongest = max(strongest, t[0]+t[1]+t[2])
	}
	var hits []Hit
	for _, d := range sc.touched {
		s := sc.score[d]
		if t := sc.top[ix.serverOf[d]]; strongest > 0 {
			s *= 1 + serverPrior*(t[0]+t[1]+t[2])/strongest
		}
		doc := &ix.docs[ix.order[d]]
		if s <= 0 || !ix.hasAll(d, q.Required) || q.Server != "" && !strings.EqualFold(doc.Server, q.Server) {
			continue
		}
		hits = insertHit(hits, Hit{Name: doc.Name, Score: s}, limit)
	}
	if limit <= 0 {
		sort.Slice(hits, func(i, j int) bool { return better(hits[i], hits[j]) })
	}
	return hits
}

// insertHit adds h to hits, which it keeps sorted and at most limit long; for limit <= 0 it
// only appends, and the caller sorts.
func insertHit(hits []Hit, h Hit, limit int) []Hit {
	if limit <= 0 {
		return append(hits, h)
	}
	if len(hits) == limit && !better(h, hits[len(hits)-1]) {
		return hits
	}
	i := sort.Search(len(hits), func(i int) bool { return better(h, hits[i]) })
	if len(hits) < limit {
		hits = append(hits, Hit{})
	}
	copy(hits[i+1:], hits[i:])
	hits[i] = h
	return hits
}

// better orders hits: higher score first, ties by name.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Name < b.Name
}

func (sc *scratch) reset(ix *Index) {
	for _, d := range sc.touched {
		sc.score[d], sc.matched[d] = 0, 0
		sc.top[ix.serverOf[d]] = [3]float64{}
	}
	sc.touched = sc.touched[:0]
}
