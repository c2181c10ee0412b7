package search

import (
	"math/bits"
	"sort"
	"strings"
)

// scratch holds one search's per-doc accumulators; its methods are the ranking: add adds
// one query term's BM25F to the docs it matches, rank orders the docs touched. Arrays
// indexed by doc, reused through a pool, keep a query at 10,000 tools free of map traffic;
// only the docs a query touched are reset afterwards.
type scratch struct {
	acc     []acc   // by doc
	touched []int32 // docs with a score, to rank and to reset

	gen      uint32   // the term being scored (see acc.termGen)
	termDocs []int32  // the docs it matched
	bits     []uint64 // by doc, for merge; all zero between its uses

	// Per server: its three best scores, for the server prior.
	top [][3]float64

	pruneScratch // for topK
}

// acc is a doc's accumulators, together so that scoring a doc touches one cache line: a
// search of a large catalog scores thousands of docs, each scattered over them.
type acc struct {
	score   float64
	best    float64 // the term's best expansion's value (for termGen's term)
	total   float64 // and the sum of its expansions' values
	termGen uint32  // the term best and total are for
	matched uint16  // how many query terms the doc matched
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
		acc: make([]acc, n), top: make([][3]float64, len(ix.servers)),
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
	sc.nextGen()
	sc.termDocs = sc.termDocs[:0]
	if e := t.expansions[0]; e.shares != nil {
		sc.addMerged(e.docs, e.shares)
		return
	}
	for _, e := range t.expansions {
		sc.gather(e.postings, e.w, t.skip)
	}
	sc.addShares()
}

// nextGen starts the next term's gathering (see acc.termGen). When the count wraps, after
// some millions of searches of a large catalog, every doc's is cleared: a doc last seen
// under the new count would otherwise read as seen for this term.
func (sc *scratch) nextGen() {
	sc.gen++
	if sc.gen == 0 {
		for i := range sc.acc {
			sc.acc[i].termGen = 0
		}
		sc.gen = 1
	}
}

// gather takes into account, for the term being scored (sc.gen), an expansion's value in
// each doc of postings but those in skip: each doc's best value and their sum, from which
// share gives the term's share.
func (sc *scratch) gather(postings []posting, w float64, skip []bool) {
	for _, p := range postings {
		d := p.doc
		if skip != nil && skip[d] {
			continue
		}
		a := &sc.acc[d]
		if a.termGen != sc.gen {
			a.termGen = sc.gen
			a.best, a.total = 0, 0
			sc.termDocs = append(sc.termDocs, d)
		}
		v := float64(float64(p.base) * w)
		a.total += v
		if v > a.best { // as max: values are never NaN nor -0
			a.best = v
		}
	}
}

// merge returns each doc's share of a term with expansions exps, leaving out the ids in
// skip: what add and scoreServer would add to each, to the bit, as one list.
func (ix *Index) merge(sc *scratch, exps []weighted, skip []bool) *merged {
	sc.nextGen()
	sc.termDocs = sc.termDocs[:0]
	for _, e := range exps {
		sc.gather(ix.terms[e.term].postings, e.w, skip)
	}
	// The docs in order, from a bitmap: sorting tens of thousands would cost more.
	if sc.bits == nil {
		sc.bits = make([]uint64, (len(sc.acc)+63)/64)
	}
	for _, d := range sc.termDocs {
		sc.bits[d/64] |= 1 << (d % 64)
	}
	m := &merged{docs: make([]int32, 0, len(sc.termDocs)), shares: make([]float64, 0, len(sc.termDocs))}
	b := runBuilder{serverOf: ix.serverOf}
	for i, w := range sc.bits {
		for ; w != 0; w &= w - 1 {
			d := int32(i*64 + bits.TrailingZeros64(w))
			a := &sc.acc[d]
			v := share(a.best, a.total)
			m.docs, m.shares = append(m.docs, d), append(m.shares, v)
			m.max = max(m.max, v)
			b.add(d, v)
		}
		sc.bits[i] = 0
	}
	m.runs = b.done()
	sc.termDocs = sc.termDocs[:0]
	return m
}

// addMerged adds to each doc its share of a merged term, as add would from its expansions.
func (sc *scratch) addMerged(docs []int32, shares []float64) {
	acc, touched := sc.acc, sc.touched
	for i, d := range docs {
		a := &acc[d]
		if a.matched == 0 {
			touched = append(touched, d)
		}
		a.matched++
		a.score += shares[i]
	}
	sc.touched = touched
}

// rank applies coordination and the server prior, filters, and returns the best limit
// hits (all of them for limit 0), leaving the scratch clean for the next search.
func (sc *scratch) rank(ix *Index, q Query, known, limit int) []Hit {
	defer sc.reset(ix)
	// coord[m] scales the score of a doc that matched m of the known terms.
	coord := coordTable(known)
	for _, d := range sc.touched {
		a := &sc.acc[d]
		a.score *= coord[min(int(a.matched), known)]
		top3(&sc.top[ix.serverOf[d]], a.score)
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
		s := sc.acc[d].score
		if t := sc.top[ix.serverOf[d]]; strongest > 0 {
			s *= 1 + serverPrior*(t[0]+t[1]+t[2])/strongest
		}
		s *= ix.prior(d)
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
		sc.acc[d].score, sc.acc[d].matched = 0, 0
		sc.top[ix.serverOf[d]] = [3]float64{}
	}
	sc.touched = sc.touched[:0]
}
