package search

import (
	"slices"
	"sort"
	"strings"

	"github.com/sahilm/fuzzy"
)

// qterm is one term of a query as the ranking scores it: the index terms it matches, each
// weighted, and the docs it must not match.
type qterm struct {
	expansions []weighted
	skip       []bool // if not nil, the ids left out
	// bound is the most the term adds to any doc's score (before coordination).
	bound float64
	// parts, if not nil, bound a Chinese word's share in each server more closely than its
	// expansions do: a doc's share is at most the sum over the parts of w times its run's
	// max in the doc's server (see prune.go).
	parts []part
}

// part is one term of a bound by server: w times the runs' maxima.
type part struct {
	w    float64
	runs []run
}

// weighted is an index term and what one unit of its BM25F base is worth for a query term.
type weighted struct {
	term     string
	w        float64
	postings []posting
	// Or, for a term's merged shares (see mergeShares), its docs and their shares, with w 1.
	docs   []int32
	shares []float64
	// runs splits postings, or docs, by server.
	runs []run
}

// qterm returns a query term scored from m, its merged shares.
func (m *merged) qterm(term string) qterm {
	e := weighted{term: term, w: 1, docs: m.docs, shares: m.shares, runs: m.runs}
	return qterm{expansions: []weighted{e}, bound: m.max}
}

// len returns how many docs e has.
func (e *weighted) len() int32 {
	if e.shares != nil {
		return int32(len(e.shares))
	}
	return int32(len(e.postings))
}

// plan returns the terms of q that match some doc, in the order they are scored: each query
// term, then two adjacent query terms that are one word in the tools, then the English of
// the Chinese words the tools lack. A term that matches nothing is left out: it adds nothing,
// and coordination counts only the terms some tool has. A term with several expansions is
// one merged list if the index has it: an index term's, merged when it was built, and a
// Chinese word's English.
func (ix *Index) plan(q Query) []qterm {
	terms, raws := q.Terms, q.raws
	if len(raws) != len(terms) {
		raws = terms // a Query built by hand, not by ParseQuery
	}
	// Two query words may be one word in the tools: "key vault" for keyvault.
	for i := 0; i+1 < len(q.Terms); i++ {
		if joined := q.Terms[i] + q.Terms[i+1]; ix.terms[joined].postings != nil {
			terms = append(terms[:len(terms):len(terms)], joined)
			raws = append(raws[:len(raws):len(raws)], joined)
		}
	}
	var plan []qterm
	for i, term := range terms {
		if slices.Contains(terms[:i], term) {
			continue
		}
		if td := ix.terms[term]; td.merged != nil {
			// Its expansions are those mergeShares merged: an index term's do not depend on
			// the word as written, which only finds typos of a term the index lacks.
			plan = append(plan, td.merged.qterm(term))
			continue
		}
		if t, ok := ix.qterm(ix.termExpansions(term, raws[i]), nil); ok {
			plan = append(plan, t)
		}
	}
	// A Chinese word the tools do not have in Chinese counts through its English, in the tools
	// described in English: one described in Chinese had its chance at the Chinese word.
	for _, g := range q.glosses {
		if ix.inCatalog(g.text) {
			continue
		}
		if t, ok := ix.qterm(ix.glossExpansions(g), ix.chinese); ok {
			b, parts := ix.glossBound(g)
			t.bound, t.parts = min(t.bound, b), parts
			plan = append(plan, t)
		}
	}
	return plan
}

// termExpansions weighs the index terms a query term matches (see expand) by their idf.
func (ix *Index) termExpansions(term, word string) []weighted {
	own, known := ix.terms[term]
	var out []weighted
	for _, e := range ix.expand(term, word) {
		// An inexact match is worth no more than an exact one of the term itself would be:
		// a rare synonym must not outrank the common word the user wrote.
		idf := ix.terms[e.term].idf
		if known && e.term != term {
			idf = min(idf, own.idf)
		}
		out = append(out, weighted{term: e.term, w: e.weight * idf})
	}
	return out
}

// qterm completes a query term's expansions with their postings and its bound, and reports
// whether it matches any doc not in skip.
func (ix *Index) qterm(expansions []weighted, skip []bool) (qterm, bool) {
	t := qterm{expansions: expansions, skip: skip}
	matches := false
	var best, sum float64
	for i := range t.expansions {
		e := &t.expansions[i]
		td := ix.terms[e.term]
		e.postings, e.runs = td.postings, td.runs
		for j := 0; !matches && j < len(e.postings); j++ {
			matches = skip == nil || !skip[e.postings[j].doc]
		}
		// A doc's share of a term is its best expansion's value plus expansionTail of the
		// others' (see scratch.add): at most this.
		v := e.w * td.maxBase
		best, sum = max(best, v), sum+v
	}
	t.bound = best + expansionTail*(sum-best)
	return t, matches
}

// selectNames resolves exact names: the unique Name first, then a tool's own name (which may
// match one tool on each of several servers).
func (ix *Index) selectNames(names []string, limit int) (hits []Hit, unknown []string) {
	seen := map[int]bool{}
	add := func(i int) {
		if !seen[i] {
			seen[i] = true
			hits = append(hits, Hit{Name: ix.docs[i].Name, Score: 1})
		}
	}
	for _, name := range names {
		if i, ok := ix.byName[name]; ok {
			add(i)
		} else if is, ok := ix.byTool[name]; ok {
			for _, i := range is {
				add(i)
			}
		} else {
			unknown = append(unknown, name)
		}
	}
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, unknown
}

type expansion struct {
	term   string
	weight float64
}

// expand returns the index terms a query term should match: itself; its synonyms; for a
// term of four or more letters, the name terms it is a prefix of ("repo" for repository);
// and, only for a term the index lacks, so that a typo never competes with a clean match,
// the name words its word is one edit from or a fuzzy subsequence of ("isue" for issue).
func (ix *Index) expand(term, word string) []expansion {
	w := 1.0
	if r := []rune(term); len(r) == 1 && isCJK(r[0]) {
		// A lone CJK character says less than a two-character word.
		w = weightCJKUnigram
	}
	out := []expansion{{term, w}}
	for _, syn := range synonyms[term] {
		out = append(out, expansion{syn, w * weightSynonym})
	}
	if isCJK(firstRune(term)) {
		return out
	}
	// nameVocab is sorted, so the terms term is a prefix of are one run.
	for i := sort.SearchStrings(ix.nameVocab, term); len(term) >= 4 && i < len(ix.nameVocab) && strings.HasPrefix(ix.nameVocab[i], term); i++ {
		if v := ix.nameVocab[i]; v != term {
			out = append(out, expansion{v, weightPrefix})
		}
	}
	if _, exact := ix.terms[term]; exact || len(word) < 4 {
		return out
	}
	// Typos keep the first letter, and nameWords is sorted: scan only that letter's run.
	lo, hi := sort.SearchStrings(ix.nameWords, word[:1]), len(ix.nameWords)
	if word[0] < 0xff {
		hi = lo + sort.SearchStrings(ix.nameWords[lo:], string([]byte{word[0] + 1}))
	}
	sameLetter := ix.nameWords[lo:hi]
	typos := false
	for _, v := range sameLetter {
		if editDistanceOne(word, v) {
			out = append(out, expansion{ix.wordTerm[v], weightTypo})
			typos = true
		}
	}
	if typos {
		return out
	}
	// Letters left out ("isue"): a fuzzy subsequence match of most of the word.
	for _, m := range fuzzy.Find(word, sameLetter) {
		if v := m.Str; float64(len(word)) >= 0.7*float64(len(v)) {
			out = append(out, expansion{ix.wordTerm[v], weightFuzzy})
		}
	}
	return out
}

// hasAll reports whether doc id contains every required term exactly.
func (ix *Index) hasAll(id int32, required []string) bool {
	for _, t := range required {
		ps := ix.terms[t].postings
		i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= id })
		if i == len(ps) || ps[i].doc != id {
			return false
		}
	}
	return true
}

// editDistanceOne reports whether a and b differ by exactly one insertion, deletion,
// substitution or adjacent transposition.
func editDistanceOne(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := len(a), len(b)
	if la > lb {
		a, b, la, lb = b, a, lb, la
	}
	if lb-la > 1 {
		return false
	}
	i := 0
	for i < la && a[i] == b[i] {
		i++
	}
	if la == lb {
		if a[i+1:] == b[i+1:] {
			return true
		}
		return i+1 < la && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	}
	return a[i:] == b[i+1:]
}

// mergeShares computes, for each term that as a query term matches other terms too
// (synonyms, longer names it begins), each doc's share of it (see scratch.add) once, so that
// a search scores one list for such a term, not each of its expansions: the docs in order,
// their shares, and runs over them, whose maxima bound a doc's share in each
// server (qterm's bound from the expansions alone supposes a doc that has them all).
func (ix *Index) mergeShares() {
	sc := &scratch{acc: make([]acc, len(ix.docs))}
	for term, td := range ix.terms {
		exps := ix.termExpansions(term, term)
		if len(exps) < 2 {
			continue
		}
		td.merged = ix.merge(sc, exps, nil)
		ix.terms[term] = td
	}
}
