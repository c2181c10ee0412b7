package search

import (
	"slices"
	"unicode/utf8"

	"github.com/toolsift/toolsift/search/cjk"
)

// weightGloss is what a tool gains from matching the English of a Chinese word of the query
// (镜像 → image), relative to matching a word the user wrote: a dictionary's sense is weaker
// evidence than the user's own word, and a query that mixes "PR" into Chinese ranks by "PR"
// first. A lone character's English (图: diagram, picture) counts weightCJKUnigram of that.
// On bench/zh.yaml, where most requests name a product in English, recall@5 is 0.90 at 0.4,
// 0.96 to 0.97 from 0.7 to 0.9, and 0.96 at 1.0 and 1.2; MRR peaks at 0.7 and 0.8.
const weightGloss = 0.8

// gloss is one Chinese word of a query and the terms of its English.
type gloss struct {
	text   string   // the word as written
	terms  []string // its English words as index terms, best first
	weight float64
}

// glossesOf segments the Han characters of a query into words and returns the English of
// each word that has some: function words (的, 一下) and characters the dictionary lacks give
// none, and terms the query already has (the "issue" of "提个 issue 议题") are not repeated.
// Text without Han characters returns nil without loading the dictionary.
func glossesOf(text string, have []string) []gloss {
	var out []gloss
	for _, w := range cjk.Segment(text) {
		if w.Function || len(w.English) == 0 {
			continue
		}
		g := gloss{text: w.Text, weight: weightGloss}
		if !w.Glossary && utf8.RuneCountInString(w.Text) == 1 {
			g.weight *= weightCJKUnigram
		}
		for _, e := range w.English {
			for _, t := range Tokens(e) { // "on-call" is two words, and "to" none
				if !slices.Contains(g.terms, t) && !slices.Contains(have, t) {
					g.terms = append(g.terms, t)
				}
			}
		}
		if len(g.terms) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// inCatalog reports whether the index has a Chinese word of the query as it is written: its
// character, or each of its overlapping pairs, the way Chinese text is indexed. Such a word
// is matched as it is (a Chinese catalog, like CloudLedger's, ranks as it did), not through
// its English.
func (ix *Index) inCatalog(word string) bool {
	rs := []rune(word)
	if len(rs) == 1 {
		_, ok := ix.terms[word]
		return ok
	}
	for i := 0; i+1 < len(rs); i++ {
		if _, ok := ix.terms[string(rs[i:i+2])]; !ok {
			return false
		}
	}
	return true
}

// glossExpansions returns the index terms a Chinese word's English should match, each
// weighted: its terms and their synonyms and prefixes (not typos: dictionary words are
// spelled right), at weightGloss, and two adjacent terms that are one word in the tools
// ("key vault" for keyvault). An inexact match is worth no more than an exact one of the
// English word it stands for.
func (ix *Index) glossExpansions(g gloss) []weighted {
	var out []weighted
	add := func(term string, w float64) {
		for i := range out {
			if out[i].term == term {
				out[i].w = max(out[i].w, w)
				return
			}
		}
		out = append(out, weighted{term: term, w: w})
	}
	for i, t := range g.terms {
		td, known := ix.terms[t]
		own := td.idf
		for _, e := range ix.expand(t, "") {
			idf := ix.terms[e.term].idf
			if known && e.term != t {
				idf = min(idf, own)
			}
			add(e.term, g.weight*e.weight*idf)
		}
		if i+1 < len(g.terms) {
			if joined, ok := ix.terms[t+g.terms[i+1]]; ok {
				add(t+g.terms[i+1], g.weight*joined.idf)
			}
		}
	}
	return out
}

// glossBound bounds a doc's share of a Chinese word through its English by the sum of the
// shares its English words would have as query terms: a share is at most the sum of the
// shares of any split of the expansions (half the best plus half the total is), and
// glossExpansions merges each word's expansions, keeping an index term's largest weight.
// It returns the parts of the sum too, to bound the share in each server, or nil if some
// word's share cannot be bounded by server.
func (ix *Index) glossBound(g gloss) (float64, []part) {
	var b float64
	var parts []part
	byServer := true
	for i, t := range g.terms {
		exps := ix.termExpansions(t, "")
		switch td, ok := ix.terms[t]; {
		case ok && td.merged != nil: // the same expansions, and weights, as mergeShares'
			b += g.weight * td.merged.max
			parts = append(parts, part{g.weight, td.merged.runs})
		case ok && len(exps) == 1: // the term itself
			b += g.weight * exps[0].w * td.maxBase
			parts = append(parts, part{g.weight * exps[0].w, td.runs})
		default:
			q, _ := ix.qterm(exps, nil)
			b += g.weight * q.bound
			byServer = false
		}
		if i+1 < len(g.terms) {
			if joined, ok := ix.terms[t+g.terms[i+1]]; ok {
				b += g.weight * joined.idf * joined.maxBase
				parts = append(parts, part{g.weight * joined.idf, joined.runs})
			}
		}
	}
	if !byServer {
		parts = nil
	}
	return b, parts
}

// hasCJK reports whether text has a CJK character.
func hasCJK(text string) bool {
	for _, r := range text {
		if isCJK(r) {
			return true
		}
	}
	return false
}
