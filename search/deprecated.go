package search

import (
	"math"
	"regexp"
	"sort"
	"strings"
)

// A tool whose description says it is deprecated ranks below the tool that replaces it: it
// scores less (prior), and never above the replacement its description names
// (belowReplacements).

// deprecatedFactor scales the score of a tool whose description says it is deprecated, so
// that the tool that replaces it ranks first, while it can still be found alone.
const deprecatedFactor = 0.7

// belowReplacements moves each deprecated tool among hits that names its replacement, also
// among hits and below it, to just below it: the description says to use the other.
func (ix *Index) belowReplacements(hits []Hit) []Hit {
	if len(ix.replacedBy) == 0 {
		return hits
	}
	moved := false
	for i, h := range hits {
		r, ok := ix.replacedBy[h.Name]
		if !ok {
			continue
		}
		for _, o := range hits[i+1:] {
			if o.Name == r {
				hits[i].Score = math.Nextafter(o.Score, math.Inf(-1))
				moved = true
			}
		}
	}
	if moved {
		sort.SliceStable(hits, func(i, j int) bool { return better(hits[i], hits[j]) })
	}
	return hits
}

// deprecated matches a description that says its tool is deprecated: a sentence that
// starts with the word ("DEPRECATED: use read_text_file", "Deprecated compatibility entry
// point"), or "this tool is deprecated". A tool that mentions something else deprecated (an
// API endpoint it calls) is not.
var deprecated = regexp.MustCompile(`(?i)(^|[.!?]\s+|\n\s*)[\[(*_]*deprecated\b|\bthis (tool|function|method|command|endpoint) (is|has been) deprecated\b`)

// useInstead finds the tool a deprecated tool's description says to use instead: "Use
// read_text_file instead", "use `firecrawl_scrape`".
var useInstead = regexp.MustCompile("(?i)\\buse\\s+`?([A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9_])`?")

// toolOf returns the name of server's tool called tool, or "".
func (ix *Index) toolOf(server, tool string) string {
	for _, i := range ix.byTool[tool] {
		if ix.docs[i].Server == server {
			return ix.docs[i].Name
		}
	}
	return ""
}

// prior is what a doc's own standing scales its final score by: deprecatedFactor for a
// deprecated tool, else 1. It is at most 1, so bounds on scores without it still hold.
func (ix *Index) prior(d int32) float64 {
	if ix.deprecated[d] {
		return deprecatedFactor
	}
	return 1
}

// noteDeprecated marks the doc id, d, if its description says it is deprecated, with the
// replacement it names.
func (ix *Index) noteDeprecated(id int32, d *Doc) {
	// The expression is slow on long descriptions and almost none have the word: it runs
	// only on those that do (any case but a mixed one).
	if !strings.Contains(d.Description, "eprecated") && !strings.Contains(d.Description, "EPRECATED") {
		return
	}
	loc := deprecated.FindStringIndex(d.Description)
	if loc == nil {
		return
	}
	ix.deprecated[id] = true
	if m := useInstead.FindStringSubmatch(d.Description[loc[0]:]); m != nil {
		if r := ix.toolOf(d.Server, m[1]); r != "" && r != d.Name {
			if ix.replacedBy == nil {
				ix.replacedBy = map[string]string{}
			}
			ix.replacedBy[d.Name] = r
		}
	}
}
