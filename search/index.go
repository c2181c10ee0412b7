// Package search ranks tools for a query. It knows nothing about MCP: documents in (name,
// server, description, parameters), ranked hits out, so it can be evaluated on its own.
package search

import (
	"math"
	"os"
	"sort"
	"strconv"
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
var k1 = 1.2

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
	// nameBonus is added, per term and unsaturated, when the term is in the tool's name or
	// keywords: BM25's saturation would otherwise let a long description outweigh the name.
	nameBonus = 1.0

	sumExpansions = false
	coverBoost    = 1.0
)

func init() {
	for _, kv := range strings.Fields(os.Getenv("TOOLSIFT_TUNE")) {
		k, v, _ := strings.Cut(kv, "=")
		f, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "k1":
			k1 = f
		case "nb":
			nameBonus = f
		case "wname":
			fieldWeight[fieldName] = f
		case "wsum":
			fieldWeight[fieldSummary] = f
		case "wdesc":
			fieldWeight[fieldDesc] = f
		case "wparam":
			fieldWeight[fieldParams] = f
		case "wserver":
			fieldWeight[fieldServer] = f
		case "cov":
			coverBoost = f
		case "sum":
			sumExpansions = f == 1
		case "syn":
			weightSynonym = f
		}
	}
}

// Weights of inexact term matches relative to an exact one: a prefix ("repo" for
// "repository"), a typo (one edit), a fuzzy subsequence ("isue" for "issue").
var (
	weightPrefix  = 0.6
	weightSynonym = 0.5
	weightTypo    = 0.5
	weightFuzzy   = 0.4
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
	// nameVocab holds the terms that occur in tool names, for typo tolerance.
	nameVocab []string
	// names holds each doc's distinct name terms, for name coverage.
	names [][]string
}

// NewIndex builds an index over docs. Later docs with a Name already seen are ignored.
func NewIndex(docs []Doc) *Index {
	ix := &Index{
		byName:   make(map[string]int, len(docs)),
		byTool:   make(map[string][]int, len(docs)),
		postings: map[string][]posting{},
		idf:      map[string]float64{},
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
		ft[fieldName] = Tokens(d.Tool)
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
		var names []string
		for _, t := range ft[fieldName] {
			if !inName[t] {
				names = append(names, t)
			}
			inName[t] = true
		}
		ix.names = append(ix.names, names)
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
	best := map[int32]float64{}
	matched := map[string]float64{} // every term the query reaches, with its best weight
	terms := dedupe(q.Terms)
	// Two query words may be one word in the tools: "key vault" for keyvault.
	for i := 0; i+1 < len(q.Terms); i++ {
		if joined := q.Terms[i] + q.Terms[i+1]; ix.postings[joined] != nil && !contains(terms, joined) {
			terms = append(terms, joined)
		}
	}
	for _, term := range terms {
		// A term counts once per tool: through its best expansion, not the sum of all.
		clear(best)
		for _, e := range ix.expand(term) {
			matched[e.term] = max(matched[e.term], e.weight)
			idf := ix.idf[e.term]
			for _, p := range ix.postings[e.term] {
				tf := float64(p.tf)
				v := tf * (k1 + 1) / (tf + k1)
				if p.name {
					v += nameBonus
				}
				v *= e.weight * idf
				if sumExpansions {
					best[p.doc] += v
				} else if v > best[p.doc] {
					best[p.doc] = v
				}
			}
		}
		for id, v := range best {
			scores[id] += v
		}
	}
	for id, s := range scores {
		if s <= 0 || !ix.hasAll(id, q.Required) || q.Server != "" && !strings.EqualFold(ix.docs[id].Server, q.Server) {
			continue
		}
		s *= 1 + coverBoost*ix.nameCoverage(id, matched)
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

// expand returns the index terms a query term should match: itself, and for a term of
// four or more letters, name terms it is a prefix of, one edit away from, or a fuzzy
// subsequence of.
func (ix *Index) expand(term string) []expansion {
	out := []expansion{{term, 1}}
	for _, syn := range synonyms[term] {
		out = append(out, expansion{syn, weightSynonym})
	}
	if len([]rune(term)) < 4 || isCJK(firstRune(term)) {
		return out
	}
	for _, v := range ix.nameVocab {
		if v == term || v[0] != term[0] {
			continue
		}
		switch {
		case strings.HasPrefix(v, term):
			out = append(out, expansion{v, weightPrefix})
		case editDistanceOne(term, v):
			out = append(out, expansion{v, weightTypo})
		}
	}
	if _, exact := ix.postings[term]; exact || len(out) > 1+len(synonyms[term]) {
		return out
	}
	// A term that matches nothing may be a misspelling with letters left out.
	for _, m := range fuzzy.Find(term, ix.nameVocab) {
		v := m.Str
		if v[0] == term[0] && float64(len(term)) >= 0.7*float64(len(v)) {
			out = append(out, expansion{v, weightFuzzy})
		}
	}
	return out
}

// nameCoverage is the share of a tool's name that the query reaches, each name term weighted
// by its idf (so that a prefix every tool of a server shares counts for little) and by how
// the query reached it (exactly, or through a synonym).
func (ix *Index) nameCoverage(id int32, matched map[string]float64) float64 {
	var covered, total float64
	for _, t := range ix.names[id] {
		idf := ix.idf[t]
		total += idf
		covered += idf * matched[t]
	}
	if total == 0 {
		return 0
	}
	return covered / total
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

func dedupe(terms []string) []string {
	seen := map[string]bool{}
	out := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
