package search

import (
	"math"
	"slices"
	"strings"
)

// Top-k pruning: a search for the best k hits scores only the servers whose tools may be
// among them or whose strength may set the server prior, and returns exactly the hits,
// order and scores of scoring every doc (rank), to the bit.
//
// The method is MaxScore (Turtle and Flood, 1995) over blocks, as in block-max WAND (Ding
// and Suel, 2011), where a block is a server's docs: ids group docs by server, so a server's
// postings are one run of each posting list, and the index keeps each run's largest base
// and the sum of its three largest (termData.runs). From them a search bounds, for each
// server, what any of its docs can score (the sum over the query's terms of the most the
// term adds to a doc there, at the coordination of matching every term the server has) and
// its strength, the sum of its three best scores (the same with each term's three largest
// adds). A term that matches several index terms (synonyms, prefixes, the English of a
// Chinese word) adds at most its best expansion's value plus expansionTail of the others';
// a term of the index with several expansions has each doc's share merged at build time
// (mergeShares), so its runs bound it exactly, and a Chinese word's is at most the sum of
// its English words'.
//
// Servers are scored in falling order of bound, each wholly: every term into each of its
// docs, in the query's order and with the same float operations as add and rank, so its
// docs' scores and its strength are exact. A server is passed over when it can matter
// neither way:
//
//   - its strength bound is below the strongest scored server's strength: the strongest
//     server is then among those scored, and the prior's denominator is exact;
//   - its bound times 1+serverPrior*min(1, strength bound/that strength) is below the k-th
//     best final score a scored doc is sure of (with its server's strength over the most
//     the strongest's can be), or none of its docs can pass server: and +required.
//
// The scan stops at the first server whose bound, tripled for its strength, fails both:
// every later one's bound is smaller. The hits are the best k of the scored docs that may
// reach the k-th sure score, with the prior as rank applies it. Bounds carry a relative
// slack far above the rounding of a few hundred float additions, so a server at a bound
// is scored, never guessed.
//
// What is not pruned: limit 0 (every hit, as Evaluate and Fuse ask) scores every doc; a
// search with fewer than k hits scores every server that may hold one; and the unit is
// the server, so a catalog of one large server (cloudledger's 60 tools) gains nothing,
// and a query of common words, which many servers match about as well as the best,
// scores many servers.

// slack widens every bound, relatively: a float sum of a few hundred shares is off by far
// less, so a server whose bound reaches a threshold only by rounding is scored.
const slack = 1e-9

// pruneScratch is topK's state beside scratch's, by server number, allocated on a pruned
// search's first use; only the servers in bounded are reset.
type pruneScratch struct {
	// srvBound is the most a doc of the server scores, srvStrength the most its strength
	// is; both first sums over the terms.
	srvBound, srvStrength []float64
	srvTerms              []int32 // query terms some doc of the server has
	// Of one term's expansions in the server: the largest value, their sum, and the sum of
	// each's three largest; srvGen is 1 + the term's place in the plan.
	srvGen                []uint32
	srvBest, srvSum, srv3 []float64
	// The same from the term's parts, if it has.
	srvPart1, srvPart3 []float64
	// The server's runs, in the query's order: 1 + indexes into runs, 0 for none.
	srvFirst, srvLast []int32
	bounded           []int32 // servers with a bound
	termSrv           []int32 // the servers a term has, reused
	runs              []queryRun
	expTerm, expIndex []int32 // of each of the plan's expansions, in order
	heap              serverHeap
	cand              []int32 // docs that may be among the best k
	maybe             []int32 // the docs of the server just scored that may be hits
	kth               []float64
}

// queryRun is the postings of one expansion of a query term in one server's docs.
type queryRun struct {
	x        int32 // the expansion: the x-th of the plan's, in order
	from, to int32 // in its postings
	next     int32 // 1 + the index of the server's next run, 0 for none
}

func (sc *scratch) preparePrune(ix *Index) {
	if sc.srvBound != nil {
		return
	}
	n := len(ix.servers)
	sc.pruneScratch = pruneScratch{
		srvBound: make([]float64, n), srvStrength: make([]float64, n), srvTerms: make([]int32, n),
		srvGen: make([]uint32, n), srvBest: make([]float64, n), srvSum: make([]float64, n),
		srv3: make([]float64, n), srvPart1: make([]float64, n), srvPart3: make([]float64, n),
		srvFirst: make([]int32, n), srvLast: make([]int32, n),
	}
}

// resetPrune leaves the scratch clean for the next search, as reset does, but clears each
// server's three best scores once, not once for each of its docs: only servers with a
// bound were scored.
func (sc *scratch) resetPrune() {
	for _, s := range sc.bounded {
		sc.srvBound[s], sc.srvStrength[s], sc.srvTerms[s], sc.srvGen[s] = 0, 0, 0, 0
		sc.srvFirst[s], sc.srvLast[s] = 0, 0
		sc.top[s] = [3]float64{}
	}
	sc.bounded, sc.cand, sc.runs = sc.bounded[:0], sc.cand[:0], sc.runs[:0]
	for _, d := range sc.touched {
		sc.acc[d].score, sc.acc[d].matched = 0, 0
	}
	sc.touched = sc.touched[:0]
}

// topK returns the best k hits for q, as rank would (see the top of this file).
func (sc *scratch) topK(ix *Index, q Query, plan []qterm, k int, st *searchStats) []Hit {
	sc.preparePrune(ix)
	defer sc.resetPrune()
	coord := coordTable(len(plan))
	sc.bound(plan, coord)
	if q.Server != "" || len(q.Required) > 0 {
		// Strengths matter only to hits: a search that no server can answer ends here.
		if !slices.ContainsFunc(sc.bounded, func(s int32) bool { return sc.mayHit(ix, q, s) }) {
			return nil
		}
	}

	// Servers in falling order of bound, taken from a heap: the scan stops long before most.
	h := sc.heap[:0]
	for _, s := range sc.bounded {
		h = append(h, boundServer{sc.srvBound[s], s})
	}
	h.init()
	defer func() { sc.heap = h }()
	var strongest float64 // the strongest scored server's strength
	var theta float64     // the k-th best final score a scored doc is sure of
	lastMost := math.Inf(1)
	sc.kth = sc.kth[:0]
	for len(h) > 0 {
		next := h.pop()
		s, u := next.server, next.bound
		if 3*u < strongest && u*(1+serverPrior*min(1, 3*u/strongest)) < theta {
			break // nor can any later server, with a smaller bound, matter
		}
		mayHit := sc.mayHit(ix, q, s)
		if str := sc.srvStrength[s]; str < strongest && (!mayHit || u*(1+serverPrior*min(1, str/strongest)) < theta) {
			continue
		}
		floor := theta // docs below it, at the most the prior gives, cannot be among the best
		if !mayHit {
			floor = math.Inf(1)
		}
		str := sc.scoreServer(plan, coord, s, floor)
		strongest = max(strongest, str)
		if !mayHit {
			continue
		}
		// No server left can be stronger than most: those after this one are at most 3*u
		// strong, and those passed over weaker than the strongest. So a doc's final score
		// is at least its score times the prior over most.
		most := max(strongest, 3*u)
		if most < 0.9*lastMost {
			// What the docs kept are sure of has grown since they were scored.
			lastMost = most
			sc.kth = sc.kth[:0]
			for _, d := range sc.cand {
				t := sc.top[ix.serverOf[d]]
				sc.kth = pushTop(sc.kth, sc.acc[d].score*(1+serverPrior*(t[0]+t[1]+t[2])/most)*ix.prior(d)*(1-slack), k)
			}
		}
		for _, d := range sc.maybe {
			if f := sc.acc[d].score; f*(1+serverPrior*min(1, str/strongest))*(1+slack) >= theta && ix.hasAll(d, q.Required) {
				sc.cand = append(sc.cand, d)
				sc.kth = pushTop(sc.kth, f*(1+serverPrior*str/most)*ix.prior(d)*(1-slack), k)
			}
		}
		if len(sc.kth) == k {
			theta = sc.kth[0]
		}
	}
	if st != nil {
		st.touched = len(sc.touched)
	}
	var hits []Hit
	for _, d := range sc.cand {
		t := sc.top[ix.serverOf[d]]
		s := sc.acc[d].score
		if strongest > 0 {
			s *= 1 + serverPrior*(t[0]+t[1]+t[2])/strongest
		}
		s *= ix.prior(d)
		if s <= 0 || len(hits) == k && s < hits[k-1].Score {
			continue
		}
		hits = insertHit(hits, Hit{Name: ix.docs[ix.order[d]].Name, Score: s}, k)
	}
	return hits
}

// bound bounds, for each server with a doc that matches some term, what a doc of it can
// score and what its strength can be, and lists its runs.
func (sc *scratch) bound(plan []qterm, coord []float64) {
	n := 0
	sc.expTerm, sc.expIndex = sc.expTerm[:0], sc.expIndex[:0]
	for i, t := range plan {
		for j, e := range t.expansions {
			n += len(e.runs)
			sc.expTerm, sc.expIndex = append(sc.expTerm, int32(i)), append(sc.expIndex, int32(j))
		}
	}
	sc.runs = slices.Grow(sc.runs[:0], n)[:n]
	n, x := 0, int32(0)
	for i := range plan {
		t := &plan[i]
		gen := uint32(i + 1)
		sc.termSrv = sc.termSrv[:0]
		for j := range t.expansions {
			e := &t.expansions[j]
			for ri, r := range e.runs {
				s := r.server
				if sc.srvGen[s] != gen {
					sc.srvGen[s] = gen
					sc.srvBest[s], sc.srvSum[s], sc.srv3[s] = 0, 0, 0
					sc.srvPart1[s], sc.srvPart3[s] = 0, 0
					sc.termSrv = append(sc.termSrv, s)
				}
				v := e.w * float64(r.max)
				sc.srvBest[s] = max(sc.srvBest[s], v)
				sc.srvSum[s] += v
				sc.srv3[s] += e.w * float64(r.top3)
				to := e.len()
				if ri+1 < len(e.runs) {
					to = e.runs[ri+1].start
				}
				sc.runs[n] = queryRun{x: x, from: r.start, to: to}
				n++
				if last := sc.srvLast[s]; last == 0 {
					sc.srvFirst[s] = int32(n)
				} else {
					sc.runs[last-1].next = int32(n)
				}
				sc.srvLast[s] = int32(n)
			}
			x++
		}
		for _, p := range t.parts {
			for _, r := range p.runs {
				// The parts' servers are among the expansions'.
				sc.srvPart1[r.server] += p.w * float64(r.max)
				sc.srvPart3[r.server] += p.w * float64(r.top3)
			}
		}
		for _, s := range sc.termSrv {
			if sc.srvTerms[s] == 0 {
				sc.bounded = append(sc.bounded, s)
			}
			sc.srvTerms[s]++
			// A doc's share is 1-expansionTail of its best expansion's value plus
			// expansionTail of their sum. Over three docs, the best values add up to no
			// more than three times the largest, nor than the sum of each expansion's three
			// largest; and the sums to no more than that.
			one := min(share(sc.srvBest[s], sc.srvSum[s]), t.bound)
			three := (1-expansionTail)*min(3*sc.srvBest[s], sc.srv3[s]) + expansionTail*sc.srv3[s]
			if t.parts != nil {
				one, three = min(one, sc.srvPart1[s]), min(three, sc.srvPart3[s])
			}
			sc.srvBound[s] += one
			sc.srvStrength[s] += min(three, 3*one)
		}
	}
	for _, s := range sc.bounded {
		c := coord[sc.srvTerms[s]] * (1 + slack)
		sc.srvBound[s] *= c
		sc.srvStrength[s] *= c
	}
}

// serverHeap orders servers by bound, largest first.
type serverHeap []boundServer

type boundServer struct {
	bound  float64
	server int32
}

func (h serverHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// pop removes the server with the largest bound and returns it.
func (h *serverHeap) pop() boundServer {
	old := *h
	top, last := old[0], len(old)-1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return top
}

func (h serverHeap) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h) && h[l].bound > h[m].bound {
			m = l
		}
		if l+1 < len(h) && h[l+1].bound > h[m].bound {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// strength is a scored server's: the sum of its three best scores.
func (sc *scratch) strength(s int32) float64 {
	t := sc.top[s]
	return t[0] + t[1] + t[2]
}

// mayHit reports whether a doc of server s may pass q's server: and +required words.
func (sc *scratch) mayHit(ix *Index, q Query, s int32) bool {
	if q.Server != "" && !strings.EqualFold(ix.servers[s], q.Server) {
		return false
	}
	for _, t := range q.Required {
		if !hasRun(ix.terms[t].runs, s) {
			return false
		}
	}
	return true
}

// scoreServer scores every doc of server s exactly as add and rank do, term by term in the
// query's order, and returns the server's strength. It keeps in maybe the docs that, with
// the most the server prior can give, reach floor: the others cannot be hits.
func (sc *scratch) scoreServer(plan []qterm, coord []float64, s int32, floor float64) float64 {
	first := len(sc.touched)
	sc.maybe = sc.maybe[:0]
	term := int32(-1)
	sc.termDocs = sc.termDocs[:0]
	for i := sc.srvFirst[s]; i != 0; {
		r := sc.runs[i-1]
		i = r.next
		rt := sc.expTerm[r.x]
		t := &plan[rt]
		e := &t.expansions[sc.expIndex[r.x]]
		if rt != term {
			sc.addShares() // the previous term's, before this one's: rank adds them in order
			term = rt
			sc.nextGen()
		}
		if e.shares != nil {
			sc.addMerged(e.docs[r.from:r.to], e.shares[r.from:r.to])
			continue
		}
		ps, w := e.postings[r.from:r.to], e.w
		if len(t.expansions) == 1 && t.skip == nil {
			// A doc's share of a term with one expansion is its value: add it at once.
			for _, p := range ps {
				a := &sc.acc[p.doc]
				if a.matched == 0 {
					sc.touched = append(sc.touched, p.doc)
				}
				a.matched++
				a.score += float64(float64(p.base) * w)
			}
			continue
		}
		sc.gather(ps, w, t.skip)
	}
	sc.addShares()
	for _, d := range sc.touched[first:] {
		a := &sc.acc[d]
		a.score *= coord[min(int(a.matched), len(plan))]
		top3(&sc.top[s], a.score)
		// As topK admits them: a gain of 1+serverPrior at most, and rounding is monotonic.
		if a.score*(1+serverPrior)*(1+slack) >= floor {
			sc.maybe = append(sc.maybe, d)
		}
	}
	return sc.strength(s)
}

// addShares adds to each doc in termDocs its share of the term just scored, as add does.
func (sc *scratch) addShares() {
	for _, d := range sc.termDocs {
		a := &sc.acc[d]
		if a.matched == 0 {
			sc.touched = append(sc.touched, d)
		}
		a.matched++
		a.score += share(a.best, a.total)
	}
	sc.termDocs = sc.termDocs[:0]
}

// hasRun reports whether runs has one of server s.
func hasRun(runs []run, s int32) bool {
	lo, hi := 0, len(runs) // runs[:lo] are of servers before s; runs[hi:] not
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if runs[m].server < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(runs) && runs[lo].server == s
}

// pushTop adds v to top, a min-heap of the k largest values seen, top[0] the k-th.
func pushTop(top []float64, v float64, k int) []float64 {
	if len(top) < k {
		top = append(top, v)
		for i := len(top) - 1; i > 0; {
			p := (i - 1) / 2
			if top[p] <= top[i] {
				break
			}
			top[p], top[i] = top[i], top[p]
			i = p
		}
		return top
	}
	if v <= top[0] {
		return top
	}
	top[0] = v
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(top) && top[l] < top[m] {
			m = l
		}
		if l+1 < len(top) && top[l+1] < top[m] {
			m = l + 1
		}
		if m == i {
			break
		}
		top[i], top[m] = top[m], top[i]
		i = m
	}
	return top
}

// top3 keeps t the three largest values it has been given, largest first.
func top3(t *[3]float64, s float64) {
	switch {
	case s > t[0]:
		t[0], t[1], t[2] = s, t[0], t[1]
	case s > t[1]:
		t[1], t[2] = s, t[1]
	case s > t[2]:
		t[2] = s
	}
}

// share is a doc's share of a query term: its best expansion's value, plus expansionTail of
// the others'. The conversion keeps the product from being fused into the sum (the Go spec
// allows that), so that every path rounds the same.
func share(best, total float64) float64 {
	return best + float64(expansionTail*(total-best))
}

// coordTable returns what coordination scales the score of a doc that matched m of known
// terms by, for each m.
func coordTable(known int) []float64 {
	coord := make([]float64, known+1)
	for m := range coord {
		coord[m] = 1
		if known > 1 {
			coord[m] = math.Pow(float64(m)/float64(known), coordination)
		}
	}
	return coord
}

// searchStats reports how a search went, for tests and benchmarks.
type searchStats struct {
	touched int // docs scored
}
