// Package search ranks tools for a query. It knows nothing about MCP: documents in (name,
// server, description, parameters), ranked hits out, so it can be evaluated on its own.
package search

import (
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Doc is one searchable tool.
type Doc struct {
	// Name identifies the tool in results; it is unique within an index.
	Name string
	// Tool is the tool's own name at its server; it may repeat across servers.
	Tool        string
	Server      string
	Description string
	Params      []Param
	// Keywords are extra terms a user configured for the tool.
	Keywords []string
}

// Param is one input parameter of a tool.
type Param struct {
	Name        string
	Description string
}

// Hit is one ranked result.
type Hit struct {
	Name  string
	Score float64
}

// Field weights and length normalisation (BM25F): a word in the tool's name says far more
// about what it does than the same word deep in a parameter description.
const k1 = 1.2

const (
	fieldName = iota
	fieldKeywords
	fieldServer
	fieldSummary // the description's first sentence
	fieldDesc    // the rest of the description
	fieldParams
	numFields
)

var (
	fieldWeight = [numFields]float64{fieldName: 3, fieldKeywords: 3, fieldServer: 1.5, fieldSummary: 1.5, fieldDesc: 1, fieldParams: 0.4}
	fieldB      = [numFields]float64{fieldName: 0.5, fieldKeywords: 0.5, fieldServer: 0.3, fieldSummary: 0.5, fieldDesc: 0.75, fieldParams: 0.75}
)

// nameBonus is added, per term and unsaturated, when the term is in the tool's name or
// keywords: BM25's saturation would otherwise let a long description outweigh the name.
const nameBonus = 0.5

// headBonus is added to the last word of a tool's name of two words or more: its head, what
// the tool acts on (get_pull_request_status is about a status, create_pull_request about a
// pull request). A request to "open a pull request" names the object it acts on, and the tool
// whose head that is fits better than one that only mentions it on the way.
const headBonus = 0.25

// expansionTail is how much a term's further expansions add after its best one: a tool that
// matches "search" and also "find" and "query" is likelier about searching, but not three
// times as likely.
const expansionTail = 0.5

// serverPrior scales how much a tool gains from its server matching the query well overall
// (see applyServerPrior).
const serverPrior = 0.4

// coordination is the exponent of the share of the query's known terms a tool matches,
// which scales its score: a tool that matches "add", "index" and "mongo" beats one that
// matches only "email", however well. Terms no tool has (names, dates) do not count.
const coordination = 0.25

// Weights of inexact term matches relative to an exact one: a prefix ("repo" for
// "repository"), a typo (one edit), a fuzzy subsequence ("isue" for "issue").
const (
	weightPrefix     = 0.6
	weightSynonym    = 0.5
	weightTypo       = 0.5
	weightFuzzy      = 0.4
	weightCJKUnigram = 0.5
)

type posting struct {
	doc int32
	// base is the term's BM25F weight in the doc before idf: the saturated, field-weighted,
	// length-normalised frequency, plus nameBonus if the term is in the name or keywords.
	base float32
}

// termData is what the index knows of one term.
type termData struct {
	postings []posting // by doc
	idf      float64
	// maxBase is the largest base in postings: no doc gains more from the term (see prune.go).
	maxBase float64
	// merged, for a term with several expansions as a query term, is each doc's share of
	// it (see mergeShares).
	merged *merged
	// runs splits postings by server, in order.
	runs []run
}

// merged is a term's share in each doc it matches, with its expansions (see mergeShares).
type merged struct {
	docs   []int32   // in order
	shares []float64 // by place in docs
	runs   []run
	max    float64 // the largest share
}

// run is the postings of one term in the docs of one server.
type run struct {
	server int32
	start  int32   // the offset of its first posting in the term's postings
	max    float32 // its largest base (or merged share), or more
	top3   float32 // the sum of its three largest, or more
}

// roundUp returns the float32 nearest v that is not below it.
func roundUp(v float64) float32 {
	f := float32(v)
	if float64(f) < v {
		f = math.Nextafter32(f, math.MaxFloat32)
	}
	return f
}

// Index is a search index. It never changes once it is built, and is safe for concurrent
// use.
//
// Inside the index a doc is known by its id: its place when the docs are grouped by server
// (servers in the order they first appear, each one's docs in the order given), so that a
// server's docs are one run of ids and of each posting list. docs keeps the order given,
// which Docs promises.
type Index struct {
	docs   []Doc
	byName map[string]int // to docs
	byTool map[string][]int
	terms  map[string]termData
	// order maps an id to its doc in docs, and idOf back.
	order, idOf []int32
	// nameVocab holds the terms that occur in tool and server names, sorted, for prefixes.
	nameVocab []string
	// nameWords holds the words of tool and server names before stemming, sorted, and
	// wordTerm maps each to its term, for typo tolerance.
	nameWords []string
	wordTerm  map[string]string
	// chinese marks the ids whose description has CJK characters: the English of a Chinese
	// query word is not matched against them (see Search).
	chinese []bool
	// deprecated marks the ids whose description says the tool is deprecated, and
	// replacedBy maps such a tool's name to the tool its description says to use instead,
	// where that is a tool of the same server.
	deprecated []bool
	replacedBy map[string]string
	// serverOf gives each id's server as a small number, for the server prior; the ids of
	// server s are serverStart[s] up to serverStart[s+1].
	serverOf    []int32
	serverStart []int32
	servers     []string  // by number
	scratch     sync.Pool // *scratch, reused across searches
	// spare keeps one scratch through garbage collections, which empty the pool: without
	// one, a search allocates and clears arrays as long as the catalog.
	spare atomic.Pointer[scratch]
}

// NewIndex builds an index over docs. Later docs with a Name already seen are ignored.
//
// A large index takes a while to build: callers that serve requests meanwhile build it on a
// goroutine of their own and keep searching the previous one (see package finder).
func NewIndex(docs []Doc) *Index {
	ix := &Index{
		byName:   make(map[string]int, len(docs)),
		byTool:   make(map[string][]int, len(docs)),
		wordTerm: map[string]string{},
	}
	ix.place(docs)
	tm := termer{an: analyzer{cache: map[string]analyzed{}}, in: interner{ids: map[string]int32{}}, ids: map[string]int32{}}
	all, heads := ix.analyze(&tm)
	postings, inVocab := postingsOf(all, heads, len(tm.in.terms))
	ix.publish(tm.in.terms, postings, inVocab)
	ix.mergeShares()
	return ix
}

// place takes in the docs, a name once, and numbers them so that each server's docs have
// consecutive ids.
func (ix *Index) place(docs []Doc) {
	servers := map[string]int32{}
	var serverOf []int32 // by place in ix.docs
	for _, d := range docs {
		if _, dup := ix.byName[d.Name]; dup {
			continue
		}
		ix.byName[d.Name] = len(ix.docs)
		ix.byTool[d.Tool] = append(ix.byTool[d.Tool], len(ix.docs))
		ix.docs = append(ix.docs, d)
		srv, ok := servers[d.Server]
		if !ok {
			srv = int32(len(servers))
			servers[d.Server] = srv
			ix.servers = append(ix.servers, d.Server)
		}
		serverOf = append(serverOf, srv)
	}
	// Ids group the docs by server: count each server's docs, then deal them out.
	ix.serverStart = make([]int32, len(ix.servers)+1)
	for _, s := range serverOf {
		ix.serverStart[s+1]++
	}
	for s := range ix.servers {
		ix.serverStart[s+1] += ix.serverStart[s]
	}
	ix.order, ix.idOf = make([]int32, len(ix.docs)), make([]int32, len(ix.docs))
	ix.serverOf = make([]int32, len(ix.docs))
	next := slices.Clone(ix.serverStart[:len(ix.servers)])
	for i, s := range serverOf {
		id := next[s]
		next[s]++
		ix.order[id], ix.idOf[i], ix.serverOf[id] = int32(i), id, s
	}
}

// termer turns text into term ids.
type termer struct {
	an  analyzer
	in  interner
	ids map[string]int32 // each word's term id; -1 marks a stop word
}

// appendIDs appends the term ids of text's words to out.
func (tm *termer) appendIDs(out []int32, text string) []int32 {
	eachWord(text, func(w string) {
		if id, ok := tm.ids[w]; ok {
			if id >= 0 {
				out = append(out, id)
			}
			return
		}
		if isCJK(firstRune(w)) { // not cached: CJK words are runs, rarely repeated
			for _, t := range appendCJK(nil, w) {
				out = append(out, tm.in.id(t))
			}
			return
		}
		id := int32(-1)
		tm.an.each(w, func(term, _ string) { id = tm.in.id(term) })
		tm.ids[w] = id
		if id >= 0 {
			out = append(out, id)
		}
	})
	return out
}

// fieldTerms are a doc's term ids, field by field.
type fieldTerms [numFields][]int32

// analyze returns each doc's terms, by id, and the term of its name's head (-1 if none).
func (ix *Index) analyze(tm *termer) (all []fieldTerms, heads []int32) {
	heads = make([]int32, 0, len(ix.docs))
	ix.deprecated = make([]bool, len(ix.docs))
	// Name words are also kept unstemmed, for typo tolerance.
	nameIDs := func(out []int32, text string) []int32 {
		tm.an.each(text, func(term, raw string) {
			ix.wordTerm[raw] = term
			out = append(out, tm.in.id(term))
		})
		return out
	}
	for _, i := range ix.order {
		d := &ix.docs[i]
		var ft fieldTerms
		ft[fieldName] = nameIDs(nil, d.Tool)
		head := int32(-1)
		if n := len(ft[fieldName]); n >= 2 {
			head = ft[fieldName][n-1]
		}
		heads = append(heads, head)
		ix.noteDeprecated(int32(len(heads)-1), d)
		ft[fieldServer] = nameIDs(nil, d.Server)
		for _, k := range d.Keywords {
			ft[fieldKeywords] = tm.appendIDs(ft[fieldKeywords], k)
		}
		ix.chinese = append(ix.chinese, hasCJK(d.Description))
		summary, rest := splitSummary(d.Description)
		ft[fieldSummary] = tm.appendIDs(nil, summary)
		ft[fieldDesc] = tm.appendIDs(nil, rest)
		for _, p := range d.Params {
			ft[fieldParams] = tm.appendIDs(ft[fieldParams], p.Name)
			ft[fieldParams] = tm.appendIDs(ft[fieldParams], p.Description)
		}
		all = append(all, ft)
	}
	return all, heads
}

// postingsOf scores every doc's terms (BM25F, with the name bonuses) into each term's
// posting list, and marks the terms of names and servers (the vocabulary typos are
// corrected to).
func postingsOf(all []fieldTerms, heads []int32, terms int) (postings [][]posting, inVocab []bool) {
	var total [numFields]float64
	for _, ft := range all {
		for f := range ft {
			total[f] += float64(len(ft[f]))
		}
	}
	n := float64(len(all))
	var avg [numFields]float64
	for f := range avg {
		avg[f] = max(total[f]/max(n, 1), 1)
	}
	// Count each term's docs first, so that all postings share one exactly sized array.
	df := make([]int32, terms)
	last := make([]int32, terms)
	for i, ft := range all {
		for _, ids := range ft {
			for _, t := range ids {
				if last[t] != int32(i)+1 {
					last[t] = int32(i) + 1
					df[t]++
				}
			}
		}
	}
	var nPostings int
	for _, c := range df {
		nPostings += int(c)
	}
	backing := make([]posting, 0, nPostings)
	postings = make([][]posting, terms)
	for t, c := range df {
		postings[t] = backing[len(backing) : len(backing) : len(backing)+int(c)]
		backing = backing[:len(backing)+int(c)]
	}
	tf := make([]float64, terms)
	inName := make([]bool, terms)
	inVocab = make([]bool, terms)
	var seen []int32
	for i, ft := range all {
		for f, ids := range ft {
			norm := 1 - fieldB[f] + fieldB[f]*float64(len(ids))/avg[f]
			for _, t := range ids {
				if tf[t] == 0 {
					seen = append(seen, t)
				}
				tf[t] += fieldWeight[f] / norm
			}
		}
		for _, t := range ft[fieldName] {
			inName[t], inVocab[t] = true, true
		}
		for _, t := range ft[fieldKeywords] {
			inName[t] = true
		}
		for _, t := range ft[fieldServer] {
			inVocab[t] = true
		}
		for _, t := range seen {
			v := tf[t]
			base := v * (k1 + 1) / (v + k1)
			if inName[t] {
				base += nameBonus
			}
			if t == heads[i] {
				base += headBonus
			}
			postings[t] = append(postings[t], posting{doc: int32(i), base: float32(base)})
			tf[t], inName[t] = 0, false
		}
		seen = seen[:0]
	}
	return postings, inVocab
}

// publish makes the index's terms of the posting lists (terms[t]'s is postings[t]): each
// list's idf, its best score and its runs by server, and the vocabulary of names.
func (ix *Index) publish(terms []string, postings [][]posting, inVocab []bool) {
	n := float64(len(ix.docs))
	// Each posting list, grouped by server as the ids are, in runs: one backing array.
	var nRuns int
	for _, ps := range postings {
		for i, p := range ps {
			if i == 0 || ix.serverOf[p.doc] != ix.serverOf[ps[i-1].doc] {
				nRuns++
			}
		}
	}
	runs := make([]run, 0, nRuns)
	ix.terms = make(map[string]termData, len(terms))
	for t, ps := range postings {
		term := terms[t]
		df := float64(len(ps))
		td := termData{postings: ps, idf: math.Log(1 + (n-df+0.5)/(df+0.5))}
		first := len(runs)
		for _, p := range ps {
			td.maxBase = max(td.maxBase, float64(p.base))
		}
		runs = ix.appendRuns(runs, len(ps), func(i int) (int32, float64) { return ps[i].doc, float64(ps[i].base) })
		td.runs = runs[first:len(runs):len(runs)]
		ix.terms[term] = td
		if inVocab[t] {
			ix.nameVocab = append(ix.nameVocab, term)
		}
	}
	sort.Strings(ix.nameVocab)
	for w := range ix.wordTerm {
		ix.nameWords = append(ix.nameWords, w)
	}
	sort.Strings(ix.nameWords)
}

// appendRuns appends to runs those of a posting list of n docs, at(i) giving the i-th's id
// and value.
func (ix *Index) appendRuns(runs []run, n int, at func(int) (int32, float64)) []run {
	b := runBuilder{serverOf: ix.serverOf, runs: runs}
	for i := range n {
		b.add(at(i))
	}
	return b.done()
}

// runBuilder splits a posting list, given doc by doc in order, into runs by server.
type runBuilder struct {
	serverOf []int32
	runs     []run
	n        int32      // docs given
	most     float64    // the last run's largest value
	top      [3]float64 // and its three largest
}

// add takes the next doc, d, of value v.
func (b *runBuilder) add(d int32, v float64) {
	if s := b.serverOf[d]; b.n == 0 || s != b.runs[len(b.runs)-1].server {
		b.end()
		b.runs = append(b.runs, run{server: s, start: b.n})
	}
	b.n++
	b.most = max(b.most, v)
	top3(&b.top, v)
}

// end closes the last run, if any docs were given: roundUp is monotonic, so rounding the
// largest value once gives the largest of the rounded values.
func (b *runBuilder) end() {
	if b.n > 0 {
		r := &b.runs[len(b.runs)-1]
		r.max, r.top3 = roundUp(b.most), roundUp(b.top[0]+b.top[1]+b.top[2])
	}
	b.most, b.top = 0, [3]float64{}
}

// done closes the last run and returns the runs.
func (b *runBuilder) done() []run {
	b.end()
	return b.runs
}

// Len reports the number of indexed documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Doc returns the document with the given name.
func (ix *Index) Doc(name string) (Doc, bool) {
	i, ok := ix.byName[name]
	if !ok {
		return Doc{}, false
	}
	return ix.docs[i], true
}

// Search ranks the index for q and returns at most limit hits, best first, ties broken by
// name. A select query returns the named tools in the order given, and the names it could
// not find.
func (ix *Index) Search(q Query, limit int) (hits []Hit, unknown []string) {
	return ix.search(q, limit, true, nil)
}

// search is Search. With prune, a search for the best few scores only the servers whose
// docs may be among them (see prune.go); without, every doc that matches, as a search for
// every hit (limit 0) always does: both give the same hits. st, if not nil, learns how
// many docs were scored.
func (ix *Index) search(q Query, limit int, prune bool, st *searchStats) (hits []Hit, unknown []string) {
	if len(q.Select) > 0 {
		return ix.selectNames(q.Select, limit)
	}
	sc := ix.getScratch()
	defer ix.putScratch(sc)
	plan := ix.plan(q)
	if prune && limit > 0 {
		return ix.belowReplacements(sc.topK(ix, q, plan, limit, st)), nil
	}
	for _, t := range plan {
		sc.add(t)
	}
	if st != nil {
		st.touched = len(sc.touched)
	}
	return ix.belowReplacements(sc.rank(ix, q, len(plan), limit)), nil
}

// splitSummary splits a description after its first sentence.
func splitSummary(desc string) (summary, rest string) {
	desc = strings.TrimSpace(desc)
	for i := 0; i < len(desc); i++ {
		switch desc[i] {
		case '\n':
			return desc[:i], desc[i+1:]
		case '.', '!', '?':
			if i+1 == len(desc) || desc[i+1] == ' ' || desc[i+1] == '\n' {
				return desc[:i+1], desc[i+1:]
			}
		}
	}
	if i := strings.IndexAny(desc, "。!?"); i >= 0 {
		return desc[:i], desc[i:]
	}
	return desc, ""
}
