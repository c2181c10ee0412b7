package embedding

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/toolsift/toolsift/search"
)

// Hybrid ranks one search index by words and by meaning (see search.Index.Fuse), with the
// vectors its Engine has when it searches. It is what tool_search, toolsift search and
// toolsift eval rank with when embeddings are configured. It is safe for concurrent use.
type Hybrid struct {
	// Fixed at creation.
	ix   *search.Index
	e    *Engine
	keys []key // of each document's text, in the order of ix.Docs

	snap atomic.Pointer[snapshot]
}

var _ search.Ranker = (*Hybrid)(nil)

// snapshot holds the vectors of a Hybrid's documents as of one generation of its Engine's.
type snapshot struct {
	gen  uint64
	vecs [][]float32 // nil for a document with none yet
	n    int         // documents with a vector
}

// Hybrid returns a ranker of ix by words and meaning. ix's tools get vectors only once
// they are tracked (see Track).
func (e *Engine) Hybrid(ix *search.Index) *Hybrid {
	docs := ix.Docs()
	h := &Hybrid{ix: ix, e: e, keys: make([]key, len(docs))}
	for i, d := range docs {
		h.keys[i] = keyOf(Text(d))
	}
	return h
}

// Doc returns the document with the given name.
func (h *Hybrid) Doc(name string) (search.Doc, bool) { return h.ix.Doc(name) }

// Search is SearchContext without a context of its own.
func (h *Hybrid) Search(q search.Query, limit int) (hits []search.Hit, unknown []string) {
	return h.SearchContext(context.Background(), q, limit)
}

// SearchContext ranks the index for q by words and meaning, as search.Index.Fuse does. It
// ranks by words alone, as search.Index.Search does, when q selects tools by name, when no
// tool has a vector yet, and when the query's vector cannot be had (see Engine): a search
// waits for the API at most the engine's Timeout, and never fails for it.
func (h *Hybrid) SearchContext(ctx context.Context, q search.Query, limit int) (hits []search.Hit, unknown []string) {
	if len(q.Select) > 0 {
		return h.ix.Search(q, limit)
	}
	s := h.vectors()
	if s.n == 0 {
		return h.ix.Search(q, limit)
	}
	qv, err := h.e.query(ctx, q.Prose())
	if err != nil {
		return h.ix.Search(q, limit)
	}
	sims := make([]float64, len(s.vecs))
	for i, v := range s.vecs {
		if len(v) != len(qv) {
			sims[i] = math.NaN()
			continue
		}
		sims[i] = dot(v, qv)
	}
	return h.ix.Fuse(q, limit, sims)
}

// vectors returns the documents' vectors, looking them up again after the engine's changed.
func (h *Hybrid) vectors() *snapshot {
	gen := h.e.gen.Load()
	if s := h.snap.Load(); s != nil && s.gen == gen {
		return s
	}
	s := &snapshot{gen: gen, vecs: make([][]float32, len(h.keys))}
	h.e.mu.Lock()
	for i, k := range h.keys {
		if v := h.e.vectors[k]; v != nil {
			s.vecs[i] = v
			s.n++
		}
	}
	h.e.mu.Unlock()
	h.snap.Store(s)
	return s
}

// dot is the dot product of two vectors of one length, in four running sums.
func dot(a, b []float32) float64 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64(s0 + s1 + s2 + s3)
}

// maxDescription bounds the part of a tool's description that is embedded, in bytes. Its
// start says what the tool does, and about 300 tokens fit the smallest context of common
// embedding models (512 tokens) with room for the name and parameters.
const maxDescription = 1000

// maxParams bounds the parameter names embedded.
const maxParams = 20

// Text is what is embedded of a tool: its server, its name in words, the start of its
// description, its keywords and its parameters' names. It is also the key of the tool's
// vector: a change to any of these is a new text, with a vector of its own.
func Text(d search.Doc) string {
	var b strings.Builder
	b.WriteString(d.Server)
	b.WriteString(" ")
	b.WriteString(nameWords(d.Tool))
	if desc := strings.TrimSpace(d.Description); desc != "" {
		b.WriteString(": ")
		b.WriteString(search.Cut(desc, maxDescription))
	}
	if len(d.Keywords) > 0 {
		b.WriteString("\nKeywords: ")
		b.WriteString(strings.Join(d.Keywords, ", "))
	}
	if len(d.Params) > 0 {
		b.WriteString("\nParameters: ")
		for i, p := range d.Params[:min(len(d.Params), maxParams)] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.Name)
		}
	}
	return b.String()
}

// nameWords spells a tool's name as words: create_issue, create-issue and createIssue all
// become "create issue".
func nameWords(name string) string {
	var b strings.Builder
	var prev rune
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/':
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}
