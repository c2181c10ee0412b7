package proxy

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// indexed is a search index and the view of the catalog it was built from: a consistent
// pair, whatever the catalog is now.
type indexed struct {
	ix   *search.Index
	view *view
	// settled is set when no server was on its first connection attempt as the catalog
	// was read: the index has every tool the servers' startup brought.
	settled bool
}

// indexer builds the search index of each new catalog aside, off every request's path, and
// publishes each when it is done: a search uses the newest index built, and never waits for
// one being built, but at startup (see Server.searchIndex).
//
// One goroutine builds, started when there is something to build and ending when the
// newest index is of the current catalog; a burst of changes while it builds costs one more
// build, of the newest catalog. Close waits for it.
type indexer struct {
	latest atomic.Pointer[indexed]

	mu      sync.Mutex // guards running, closed, published and deferred
	running bool
	closed  bool
	// deferred is the first build's timer (see startupIndexDelay).
	deferred *time.Timer
	// published is closed, and replaced, whenever latest changes.
	published chan struct{}
	done      sync.WaitGroup // the builder goroutine
}

func newIndexer() *indexer { return &indexer{published: make(chan struct{})} }

// startupIndexDelay is how long after start the index of the cached catalogs is built,
// unless a search or a catalog change asks for it sooner. A client's handshake (initialize,
// tools/list, prompts/list, …) comes in the first milliseconds, and on two cores a build
// at once (56 ms of CPU for 1,135 tools, and its garbage) delayed the answers to it by 15–25
// ms of a warm start's ~100; the first search comes after a model call, seconds later.
const startupIndexDelay = 300 * time.Millisecond

// publish makes ix the newest index, if latest is still old, and wakes whoever waits for
// one.
func (x *indexer) publish(old, ix *indexed) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.latest.CompareAndSwap(old, ix) {
		close(x.published)
		x.published = make(chan struct{})
	}
}

// next returns the newest index, and a channel closed when a newer one is published.
func (x *indexer) next() (*indexed, <-chan struct{}) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.latest.Load(), x.published
}

// kickIndex starts the builder unless it is running, or the server is closed.
func (s *Server) kickIndex() {
	x := s.indexer
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.running || x.closed {
		return
	}
	x.running = true
	x.done.Add(1)
	go s.buildIndexes()
}

// buildIndexes builds the index of the current catalog until the newest index is of the
// catalog that is current when it checks, under mu: a kick after that check starts a new
// builder, one before it finds this one running and leaves the catalog to it.
func (s *Server) buildIndexes() {
	x := s.indexer
	defer x.done.Done()
	for {
		// Asked before the catalog is read: a server that has made its first attempt has
		// put its tools in the catalog by then.
		settled := s.startupDone()
		v := s.view()
		if cur := x.latest.Load(); cur == nil || cur.view.cat != v.cat {
			start := time.Now()
			x.publish(cur, &indexed{ix: NewIndex(v.cat), view: v, settled: settled})
			s.log.Debug("search index built", "tools", len(v.cat.Tools), "duration_ms", time.Since(start).Milliseconds())
			continue
		}
		x.mu.Lock()
		if s.ups.Catalog() == v.cat || x.closed {
			x.running = false
			x.mu.Unlock()
			return
		}
		x.mu.Unlock()
	}
}

// startupDone reports whether every server has made its first connection attempt.
func (s *Server) startupDone() bool {
	return len(s.ups.WaitStarted(ended)) == 0
}

// ended is a context that has ended: to ask what a wait would find, without waiting.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// searchIndex returns the newest search index built, with the view of its catalog, and
// asks for one of the current catalog if it is not that. It waits, up to StartupWait or the
// end of ctx, only while there is no index, or, once the servers' startup has ended, no
// index of a catalog it brought: answering from an older, emptier catalog would tell the
// model that a capability does not exist. It returns nil if there is no index yet.
func (s *Server) searchIndex(ctx context.Context) *indexed {
	x := s.indexer
	var t *time.Timer
	for {
		cur, published := x.next()
		if cur == nil || cur.view.cat != s.ups.Catalog() {
			s.kickIndex()
		}
		if cur != nil && !cur.settled && s.startupDone() {
			if cur.view.cat == s.ups.Catalog() {
				// Read after startup ended: the catalog has what startup brought.
				x.publish(cur, &indexed{ix: cur.ix, view: cur.view, settled: true})
				continue
			}
		} else if cur != nil {
			return cur
		}
		if t == nil {
			t = time.NewTimer(s.opts.StartupWait)
			defer t.Stop()
		}
		select {
		case <-published:
		case <-ctx.Done():
			return x.latest.Load()
		case <-t.C:
			return x.latest.Load()
		}
	}
}

// Close stops building search indexes and waits for a build in progress to end. The server
// still answers; a search finds nothing new. Close is idempotent.
func (s *Server) Close() error {
	x := s.indexer
	x.mu.Lock()
	x.closed = true
	if x.deferred != nil {
		x.deferred.Stop()
	}
	x.mu.Unlock()
	x.done.Wait()
	return nil
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
