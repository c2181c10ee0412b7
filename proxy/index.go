package proxy

import (
	"sync"

	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// indexCache holds the search index of the latest catalog, built on first use after each
// change.
type indexCache struct {
	mu  sync.Mutex // guards ix and cat; held while an index is built, so that one is built at a time
	ix  *search.Index
	cat *upstream.Catalog // the catalog ix was built from
}

// searchIndex returns an index of the current catalog, rebuilding it after a change, and the
// catalog it was built from.
func (s *Server) searchIndex() (*search.Index, *upstream.Catalog) {
	cat := s.ups.Catalog()
	c := &s.index
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cat != cat {
		c.ix, c.cat = NewIndex(cat), cat
	}
	return c.ix, c.cat
}

// NewIndex builds the search index of a catalog.
func NewIndex(cat *upstream.Catalog) *search.Index {
	docs := make([]search.Doc, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		docs = append(docs, Doc(t))
	}
	return search.NewIndex(docs)
}

// Doc converts an upstream tool to a search document.
func Doc(t upstream.Tool) search.Doc {
	return search.Doc{
		Name: t.Exposed, Tool: t.Name, Server: t.Server, Description: t.Description,
		Keywords: t.Keywords, Params: search.ParamsFromSchema(t.InputSchema),
	}
}
