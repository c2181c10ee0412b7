package search

import (
	"errors"
	"strings"
)

// Query is a parsed tool_search query.
type Query struct {
	// Terms are the normalised keywords to rank by.
	Terms []string
	// Required are terms every hit must contain (written +word).
	Required []string
	// Select names tools to return as they are (written select:a,b).
	Select []string
	// Server restricts results to the tools of one server (written server:NAME).
	Server string
	// Group asks for every tool of a configured group, or of a server (written group:NAME);
	// the caller resolves it, since groups are configuration, not index.
	Group string
	// raws holds, beside each of Terms, the word it came from before stemming.
	raws []string
	// glosses holds the English of the query's Chinese words (see cjk.go).
	glosses []gloss
	// text is the query as written.
	text string
}

// ErrEmptyQuery reports a query with nothing to search for.
var ErrEmptyQuery = errors.New("empty query")

// ParseQuery reads the query forms tool_search accepts: keywords, +required keywords,
// server:NAME to search one server, select:a,b for tools known by name, and group:NAME for
// a group of tools at once. Chinese words are also read through their English (see cjk.go).
func ParseQuery(s string) (Query, error) {
	q := Query{text: s}
	s = strings.TrimSpace(s)
	if rest, ok := cutPrefixFold(s, "group:"); ok {
		q.Group = strings.TrimSpace(rest)
		if q.Group == "" || strings.ContainsAny(q.Group, " \t,") {
			return q, errors.New("group: takes one name (write group:NAME, a server's or a configured group's)")
		}
		return q, nil
	}
	if rest, ok := cutPrefixFold(s, "select:"); ok {
		for _, name := range strings.Split(rest, ",") {
			if name = strings.TrimSpace(name); name != "" {
				q.Select = append(q.Select, name)
			}
		}
		if len(q.Select) == 0 {
			return q, errors.New("select: names no tools (write select:name1,name2)")
		}
		return q, nil
	}
	var words []string
	for _, f := range strings.Fields(s) {
		if name, ok := cutPrefixFold(f, "server:"); ok && name != "" {
			q.Server = name
			continue
		}
		words = append(words, strings.ToLower(strings.Trim(f, ".,;:!?\"'()")))
		req, required := strings.CutPrefix(f, "+")
		if !required {
			req = f
		}
		ts, raws := analyze(req)
		if required {
			q.Required = append(q.Required, ts...)
		}
		q.Terms = append(q.Terms, ts...)
		q.raws = append(q.raws, raws...)
	}
	for i := 0; i+1 < len(words); i++ {
		if syn, ok := pairSynonyms[[2]string{words[i], words[i+1]}]; ok {
			q.Terms = append(q.Terms, termOf(syn))
			q.raws = append(q.raws, syn)
		}
	}
	if len(q.Terms) == 0 {
		return q, ErrEmptyQuery
	}
	q.glosses = glossesOf(s, q.Terms)
	return q, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}
