package proxy

import (
	"context"
	"sync"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// hybridCache holds the ranker by words and meaning of the latest search index.
type hybridCache struct {
	mu sync.Mutex // guards ix and h
	ix *search.Index
	h  *embedding.Hybrid
}

// rank ranks ix for q: by words and meaning when embeddings are configured, else by words.
// It never fails nor waits past the embeddings' timeout (see embedding.Hybrid).
func (s *Server) rank(ctx context.Context, ix *search.Index, q search.Query, limit int) ([]search.Hit, []string) {
	if s.opts.Embeddings == nil {
		return ix.Search(q, limit)
	}
	c := &s.hybrid
	c.mu.Lock()
	if c.ix != ix {
		c.ix, c.h = ix, s.opts.Embeddings.Hybrid(ix)
	}
	h := c.h
	c.mu.Unlock()
	return h.SearchContext(ctx, q, limit)
}

// trackEmbeddings hands the current catalog's tools to the embeddings engine, which
// computes the vectors it lacks in the background: never on a search's path.
func (s *Server) trackEmbeddings() {
	if s.opts.Embeddings != nil {
		s.opts.Embeddings.Track(Docs(s.ups.Catalog()))
	}
}

// Docs converts a catalog's tools to search documents, as NewIndex does.
func Docs(cat *upstream.Catalog) []search.Doc {
	docs := make([]search.Doc, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		docs = append(docs, Doc(t))
	}
	return docs
}
