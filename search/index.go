// Package search ranks tools for a query. It knows nothing about MCP: documents in (name,
// server, description, parameters), ranked hits out, so it can be evaluated on its own.
package search

import (
	"math"
	"sort"
	"strings"

	"github.com/sahilm/fuzzy"
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
	doc  int32
	tf   float32 // field-weighted, length-normalised term frequency
	name bool    // the term is in the tool's name or keywords
}

// Index is an immutable search index. It is safe for concurrent use.
type Index struct {
	docs     []Doc
	byName   map[string]int
	byTool   map[string][]int
	postings map[string][]posting
	idf      map[string]float64
	// nameVocab holds the terms that occur in tool and server names, sorted, for prefixes.
	nameVocab []string
	// nameWords holds the words of tool and server names before stemming, sorted, and
	// wordTerm maps each to its term, for typo tolerance.
	nameWords []string
	wordTerm  map[string]string
}

// NewIndex builds an index over docs. Later docs with a Name already seen are ignored.
func NewIndex(docs []Doc) *Index {
	ix := &Index{
		byName:   make(map[string]int, len(docs)),
		byTool:   make(map[string][]int, len(docs)),
		postings: map[string][]posting{},
		idf:      map[string]float64{},
		wordTerm: map[string]string{},
	}
	type fieldTokens [numFields][]string
	var all []fieldTokens
	var total [numFields]float64
	for _, d := range docs {
		if _, dup := ix.byName[d.Name]; dup {
			continue
		}
		ix.byName[d.Name] = len(ix.docs)
		ix.byTool[d.Tool] = append(ix.byTool[d.Tool], len(ix.docs))
		ix.docs = append(ix.docs, d)
		var ft fieldTokens
		var raws []string
		ft[fieldName], raws = analyze(d.Tool)
		for i, w := range raws {
			ix.wordTerm[w] = ft[fieldName][i]
		}
		serverTerms, serverRaws := analyze(d.Server)
		for i, w := range serverRaws {
			ix.wordTerm[w] = serverTerms[i]
		}
		ft[fieldKeywords] = Tokens(strings.Join(d.Keywords, " "))
		ft[fieldServer] = Tokens(d.Server)
		summary, rest := splitSummary(d.Description)
		ft[fieldSummary] = Tokens(summary)
		ft[fieldDesc] = Tokens(rest)
		for _, p := range d.Params {
			ft[fieldParams] = append(ft[fieldParams], Tokens(p.Name)...)
			ft[fieldParams] = append(ft[fieldParams], Tokens(p.Description)...)
		}
		for f := range ft {
			total[f] += float64(len(ft[f]))
		}
		all = append(all, ft)
	}
	n := float64(len(ix.docs))
	var avg [numFields]float64
	for f := range avg {
		avg[f] = max(total[f]/max(n, 1), 1)
	}
	vocab := map[string]bool{}
	for i, ft := range all {
		tf := map[string]float64{}
		for f, toks := range ft {
			norm := 1 - fieldB[f] + fieldB[f]*float64(len(toks))/avg[f]
			for _, t := range toks {
				tf[t] += fieldWeight[f] / norm
			}
		}
		inName := map[string]bool{}
		for _, t := range ft[fieldName] {
			inName[t] = true
		}
		for _, t := range ft[fieldKeywords] {
			inName[t] = true
		}
		for t, v := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: float32(v), name: inName[t]})
		}
		for _, t := range ft[fieldName] {
			vocab[t] = true
		}
		for _, t := range ft[fieldServer] {
			vocab[t] = true
		}
	}
	for t, ps := range ix.postings {
		df := float64(len(ps))
		ix.idf[t] = math.Log(1 + (n-df+0.5)/(df+0.5))
	}
	for t := range vocab {
		ix.nameVocab = append(ix.nameVocab, t)
	}
	sort.Strings(ix.nameVocab)
	for w := range ix.wordTerm {
		ix.nameWords = append(ix.nameWords, w)
	}
	sort.Strings(ix.nameWords)
	return ix
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
	if len(q.Select) > 0 {
		return ix.selectNames(q.Select, limit)
	}
	scores := map[int32]float64{}
	matchedTerms := map[int32]int{}
	known := 0
	best := map[int32]float64{}
	total := map[int32]float64{}
	terms, raws := q.Terms, q.raws
	if len(raws) != len(terms) {
		raws = terms // a Query built by hand, not by ParseQuery
	}
	// Two query words may be one word in the tools: "key vault" for keyvault.
	for i := 0; i+1 < len(q.Terms); i++ {
		if joined := q.Terms[i] + q.Terms[i+1]; ix.postings[joined] != nil {
			terms = append(terms[:len(terms):len(terms)], joined)
			raws = append(raws[:len(raws):len(raws)], joined)
		}
	}
	seen := map[string]bool{}
	for i, term := range terms {
		if seen[term] {
			continue
		}
		seen[term] = true
		// A term counts once per tool: through its best expansion, not the sum of all.
		clear(best)
		clear(total)
		for _, e := range ix.expand(term, raws[i]) {
			// An inexact match is worth no more than an exact one of the term itself would
			// be: a rare synonym must not outrank the common word the user wrote.
			idf := ix.idf[e.term]
			if own, ok := ix.idf[term]; ok && e.term != term {
				idf = min(idf, own)
			}
			for _, p := range ix.postings[e.term] {
				tf := float64(p.tf)
				v := tf * (k1 + 1) / (tf + k1)
				if p.name {
					v += nameBonus
				}
				v *= e.weight * idf
				total[p.doc] += v
				if v > best[p.doc] {
					best[p.doc] = v
				}
			}
		}
		if len(best) > 0 {
			known++
		}
		for id, v := range best {
			matchedTerms[id]++
			scores[id] += v + expansionTail*(total[id]-v)
		}
	}
	if known > 1 {
		for id, sc := range scores {
			scores[id] = sc * math.Pow(float64(matchedTerms[id])/float64(known), coordination)
		}
	}
	ix.applyServerPrior(scores)
	for id, s := range scores {
		if s <= 0 || !ix.hasAll(id, q.Required) || q.Server != "" && !strings.EqualFold(ix.docs[id].Server, q.Server) {
			continue
		}
		hits = append(hits, Hit{Name: ix.docs[id].Name, Score: s})
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].Name < hits[j].Name
	})
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
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
	if _, exact := ix.postings[term]; exact || len(word) < 4 {
		return out
	}
	typos := false
	for _, v := range ix.nameWords {
		if v[0] == word[0] && editDistanceOne(word, v) {
			out = append(out, expansion{ix.wordTerm[v], weightTypo})
			typos = true
		}
	}
	if typos {
		return out
	}
	// Letters left out ("isue"): a fuzzy subsequence match of most of the word.
	for _, m := range fuzzy.Find(word, ix.nameWords) {
		if v := m.Str; v[0] == word[0] && float64(len(word)) >= 0.7*float64(len(v)) {
			out = append(out, expansion{ix.wordTerm[v], weightFuzzy})
		}
	}
	return out
}

// applyServerPrior raises the tools of servers that match the query well as a whole: a
// query about pods and namespaces is about Kubernetes, so kubectl_get should rank above a
// lone match of "staging" among another server's release stages. A server's strength is the
// sum of its three best scores; each tool gains up to serverPrior times its own score, in
// proportion to its server's strength against the strongest server's.
func (ix *Index) applyServerPrior(scores map[int32]float64) {
	top := map[string]*[3]float64{}
	for id, sc := range scores {
		srv := ix.docs[id].Server
		t := top[srv]
		if t == nil {
			t = &[3]float64{}
			top[srv] = t
		}
		switch {
		case sc > t[0]:
			t[0], t[1], t[2] = sc, t[0], t[1]
		case sc > t[1]:
			t[1], t[2] = sc, t[1]
		case sc > t[2]:
			t[2] = sc
		}
	}
	strength := make(map[string]float64, len(top))
	var best float64
	for srv, t := range top {
		strength[srv] = t[0]
		best = max(best, strength[srv])
	}
	if best <= 0 {
		return
	}
	for id, sc := range scores {
		scores[id] = sc * (1 + serverPrior*strength[ix.docs[id].Server]/best)
	}
}

// hasAll reports whether doc id contains every required term exactly.
func (ix *Index) hasAll(id int32, required []string) bool {
	for _, t := range required {
		ps := ix.postings[t]
		i := sort.Search(len(ps), func(i int) bool { return ps[i].doc >= id })
		if i == len(ps) || ps[i].doc != id {
			return false
		}
	}
	return true
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
