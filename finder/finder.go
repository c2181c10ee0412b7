// Package finder turns the upstream catalog into ranked matches. It builds the search index
// of each new catalog in the background, and answers a query by words (search), by meaning
// too where embeddings are configured (embedding), and, when the words leave the choice
// open, by asking a Chooser (a client's model). tool_search and the search and eval commands
// all find tools through it.
package finder

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/embedding"
	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// Source is what a Finder needs of the upstream servers; *upstream.Pool is one.
type Source interface {
	Catalog() *upstream.Catalog
	Statuses() []upstream.Status
	// WaitStarted waits for servers still on their first connection attempt and returns
	// those still on it when ctx ends.
	WaitStarted(ctx context.Context) []string
}

var _ Source = (*upstream.Pool)(nil)

// Options configures a Finder. The zero value of each field means its documented default.
type Options struct {
	// Logger receives a record per index built; nil discards them.
	Logger *slog.Logger
	// Embeddings, if set, ranks keyword queries by meaning as well as by words, and is told
	// of every catalog to compute the tools' vectors; nil ranks by words alone. The caller
	// owns it and closes it after the Finder.
	Embeddings *embedding.Engine
	// Groups maps a group name to patterns of exposed tool names, for group:NAME; a name
	// that is no group's is taken as a server's.
	Groups map[string][]string
	// StartupWait caps how long a Find waits for servers still on their first connection
	// attempt; 0 means 10s. Answering from an empty catalog would tell the model that a
	// capability does not exist.
	StartupWait time.Duration
	// IndexDelay holds back the first index build (of the cached catalogs) unless a Find or
	// a change asks for it sooner; 0 means 300ms, negative means none. A client's handshake
	// comes in the first milliseconds, and the first search after a model call, seconds
	// later: a build at once would only delay the handshake's answers.
	IndexDelay time.Duration
}

// Finder finds tools in the current catalog. It is safe for concurrent use.
type Finder struct {
	// Fixed at creation.
	src  Source
	opts Options
	log  *slog.Logger

	latest atomic.Pointer[indexed] // the newest index built

	mu      sync.Mutex // guards the fields below
	running bool       // a builder goroutine runs
	closed  bool
	delay   *time.Timer   // the first build's (see IndexDelay)
	built   chan struct{} // closed, and replaced, whenever latest changes
	hybrid  *embedding.Hybrid
	hyIx    *search.Index // the index hybrid ranks
	builder sync.WaitGroup
}

// indexed is a search index and the catalog it was built from.
type indexed struct {
	ix  *search.Index
	cat *upstream.Catalog
	// settled is set when no server was on its first connection attempt as the catalog was
	// read: the index has every tool the servers' startup brought.
	settled bool
}

// New returns a Finder over src's catalog. Call Changed when it changes, and Close when
// done.
func New(src Source, opts Options) *Finder {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.StartupWait == 0 {
		opts.StartupWait = 10 * time.Second
	}
	if opts.IndexDelay == 0 {
		opts.IndexDelay = 300 * time.Millisecond
	}
	f := &Finder{src: src, opts: opts, log: opts.Logger, built: make(chan struct{})}
	f.track()
	if opts.IndexDelay > 0 {
		f.delay = time.AfterFunc(opts.IndexDelay, f.kick)
	} else {
		f.kick()
	}
	return f
}

// Changed takes in a new catalog: its index is built aside, and the embeddings engine, if
// any, computes the vectors it lacks, never on a search's path.
func (f *Finder) Changed() {
	f.kick()
	f.track()
}

func (f *Finder) track() {
	if f.opts.Embeddings != nil {
		f.opts.Embeddings.Track(Docs(f.src.Catalog()))
	}
}

// Close stops building indexes and waits for a build in progress. It is idempotent.
func (f *Finder) Close() {
	f.mu.Lock()
	f.closed = true
	if f.delay != nil {
		f.delay.Stop()
	}
	f.mu.Unlock()
	f.builder.Wait()
}

// kick starts the builder unless it is running, or the Finder is closed. One goroutine
// builds, ending when the newest index is of the current catalog; a burst of changes while
// it builds costs one more build, of the newest catalog.
func (f *Finder) kick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running || f.closed {
		return
	}
	f.running = true
	f.builder.Go(f.build)
}

func (f *Finder) build() {
	for {
		// Asked before the catalog is read: a server that has made its first attempt has
		// put its tools in the catalog by then.
		settled := f.startupDone()
		cat := f.src.Catalog()
		if cur := f.latest.Load(); cur == nil || cur.cat != cat {
			start := time.Now()
			f.publish(cur, &indexed{ix: Index(cat), cat: cat, settled: settled})
			f.log.Debug("search index built", "tools", len(cat.Tools), "duration_ms", time.Since(start).Milliseconds())
			continue
		}
		f.mu.Lock()
		if f.src.Catalog() == cat || f.closed {
			f.running = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
	}
}

// publish makes ix the newest index, if latest is still old, and wakes whoever waits.
func (f *Finder) publish(old, ix *indexed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.latest.CompareAndSwap(old, ix) {
		close(f.built)
		f.built = make(chan struct{})
	}
}

// startupDone reports whether every server has made its first connection attempt.
func (f *Finder) startupDone() bool { return len(f.src.WaitStarted(ended)) == 0 }

// ended is a context that has ended: to ask what a wait would find, without waiting.
var ended = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// index returns the newest index built, and asks for one of the current catalog if it is
// not that. It waits, up to StartupWait or the end of ctx, only while there is no index,
// or, once the servers' startup has ended, no index of a catalog it brought: answering
// from an older, emptier catalog would tell the model that a capability does not exist.
// It returns nil if there is no index yet.
func (f *Finder) index(ctx context.Context) *indexed {
	var t *time.Timer
	for {
		f.mu.Lock()
		cur, built := f.latest.Load(), f.built
		f.mu.Unlock()
		if cur == nil || cur.cat != f.src.Catalog() {
			f.kick()
		}
		if cur != nil && !cur.settled && f.startupDone() {
			if cur.cat == f.src.Catalog() {
				// Read after startup ended: the catalog has what startup brought.
				f.publish(cur, &indexed{ix: cur.ix, cat: cur.cat, settled: true})
				continue
			}
		} else if cur != nil {
			return cur
		}
		if t == nil {
			t = time.NewTimer(f.opts.StartupWait)
			defer t.Stop()
		}
		select {
		case <-built:
		case <-ctx.Done():
			return f.latest.Load()
		case <-t.C:
			return f.latest.Load()
		}
	}
}

// Request is a query to find tools for.
type Request struct {
	Query search.Query
	// Text is the query as the model wrote it, for a Chooser.
	Text string
	// Limit bounds the hits; 0 means every tool the ranking matched.
	Limit int
	// MaxGroup bounds the tools a group:NAME may find that are not always-load; 0 means
	// no bound. (A session keeps only so many unlocked.)
	MaxGroup int
	// Choose, if not nil, is asked to choose among the best candidates when the words are
	// unsure.
	Choose Chooser
	// Admits, if not nil, keeps only the tools it admits: what a caller may not use is not
	// found, as if it did not exist (a select: of its name is Unknown).
	Admits func(*upstream.Tool) bool
}

// Result is what a Find found.
type Result struct {
	// Hits are the tools found, best first.
	Hits []Hit
	// Catalog is the catalog the hits are of.
	Catalog *upstream.Catalog
	// Unknown lists select: names that match no tool.
	Unknown []string
	// Pending lists the servers still starting, not searched yet.
	Pending []string
}

// Hit is a tool found, with why it was.
type Hit struct {
	// Tool is the tool as its server listed it; Tool.Server names the server, Tool.Exposed
	// the name the client calls.
	Tool upstream.Tool
	// Score is the ranking's score, comparable within one Find; 0 for group:.
	Score float64
	Why   Why
}

// Why says how a Hit was found.
type Why string

const (
	ByWords   Why = "words"             // ranked by the words of name, description and parameters
	ByMeaning Why = "words and meaning" // ranked by words fused with embeddings
	BySelect  Why = "select"            // named by select:
	ByGroup   Why = "group"             // in the group or server of group:
	ByModel   Why = "model"             // chosen by the client's model among the best ranked
)

// Names returns the exposed names of the hits, in order.
func (r Result) Names() []string {
	out := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = h.Tool.Exposed
	}
	return out
}

// Find ranks the tools for a query. A server still on its first connection attempt is
// waited for (up to StartupWait), and named in Pending if it is still starting.
func (f *Finder) Find(ctx context.Context, req Request) (Result, error) {
	var res Result
	if !f.startupDone() {
		wctx, cancel := context.WithTimeout(ctx, f.opts.StartupWait)
		res.Pending = f.src.WaitStarted(wctx)
		cancel()
	}
	idx := f.index(ctx)
	if idx == nil {
		// Still building the first index past StartupWait: nothing can be found yet.
		idx = &indexed{ix: search.NewIndex(nil), cat: f.src.Catalog()}
		res.Pending = append(res.Pending, "(the search index)")
	}
	res.Catalog = idx.cat
	if cur := f.src.Catalog(); cur != idx.cat && len(cur.Held) > 0 {
		// An index of an older catalog may have a tool held for review since: it is not
		// found until approved (see package pin), however recent the index.
		admits := req.Admits
		req.Admits = func(t *upstream.Tool) bool {
			_, held := cur.HeldTool(t.Exposed)
			return !held && (admits == nil || admits(t))
		}
	}
	q := req.Query
	switch {
	case q.Group != "":
		tools, err := f.group(idx.cat, q.Group, req.MaxGroup, req.Admits)
		for _, t := range tools {
			res.Hits = append(res.Hits, Hit{Tool: t, Why: ByGroup})
		}
		return res, err
	case len(q.Select) > 0:
		hits, unknown := idx.ix.Search(q, req.Limit)
		res.Hits, res.Unknown = hitsOf(idx.cat, hits, BySelect), unknown
		if req.Admits != nil {
			for _, h := range res.Hits {
				if !req.Admits(&h.Tool) {
					res.Unknown = append(res.Unknown, h.Tool.Exposed)
				}
			}
			res.Hits = admitted(res.Hits, req.Admits)
		}
		return res, nil
	}
	// Ranked a little deeper than asked where a Chooser may choose, when the words are
	// unsure: a deeper ranking prunes less.
	depth := req.Limit
	if req.Choose != nil && depth > 0 {
		depth = max(depth, choiceCandidates)
	}
	why := ByWords
	if f.opts.Embeddings != nil {
		why = ByMeaning
	}
	hits, found := f.rankAdmitted(ctx, idx, q, depth, req.Admits, why)
	res.Hits = found
	if req.Choose != nil {
		words := hits
		if f.opts.Embeddings != nil {
			words, _ = idx.ix.Search(q, 2) // fused scores say nothing of how sure the words are
		}
		if unsure(words) {
			if picked := f.choose(ctx, req, idx.cat, res.Hits); picked != nil {
				res.Hits = picked
			}
		}
	}
	if req.Limit > 0 {
		res.Hits = res.Hits[:min(len(res.Hits), req.Limit)]
	}
	return res, nil
}

// admittedDepth is how many times deeper than asked a ranking goes first when some tools
// are not admitted: deep enough that the admitted ones usually fill the limit, and the
// whole catalog is ranked only when they do not.
const admittedDepth = 8

// rankAdmitted ranks for q the tools admits admits (all when nil), depth of them (0: all
// that match), and returns the ranking's hits and the tools found.
func (f *Finder) rankAdmitted(ctx context.Context, idx *indexed, q search.Query, depth int, admits func(*upstream.Tool) bool, why Why) ([]search.Hit, []Hit) {
	if admits == nil || depth == 0 {
		hits, _ := f.rank(ctx, idx.ix, q, depth)
		return hits, admitted(hitsOf(idx.cat, hits, why), admits)
	}
	hits, _ := f.rank(ctx, idx.ix, q, depth*admittedDepth)
	found := admitted(hitsOf(idx.cat, hits, why), admits)
	if len(found) < depth && len(hits) == depth*admittedDepth {
		// Too few admitted among those: there may be more further down.
		hits, _ = f.rank(ctx, idx.ix, q, 0)
		found = admitted(hitsOf(idx.cat, hits, why), admits)
	}
	return hits, found
}

// admitted returns the hits whose tools admits admits; all of them when it is nil.
func admitted(hits []Hit, admits func(*upstream.Tool) bool) []Hit {
	if admits == nil {
		return hits
	}
	return slices.DeleteFunc(hits, func(h Hit) bool { return !admits(&h.Tool) })
}

// hitsOf gives the ranking's hits their tools from cat, the catalog the index was built of.
func hitsOf(cat *upstream.Catalog, hits []search.Hit, why Why) []Hit {
	out := make([]Hit, 0, len(hits))
	for _, h := range hits {
		if t, ok := cat.Lookup(h.Name); ok {
			out = append(out, Hit{Tool: t, Score: h.Score, Why: why})
		}
	}
	return out
}

// rank ranks ix for q: by words and meaning when embeddings are configured, else by words.
// It never fails nor waits past the embeddings' timeout (see embedding.Hybrid).
func (f *Finder) rank(ctx context.Context, ix *search.Index, q search.Query, limit int) ([]search.Hit, []string) {
	if f.opts.Embeddings == nil {
		return ix.Search(q, limit)
	}
	return f.hybridOf(ix).SearchContext(ctx, q, limit)
}

// hybridOf returns the ranker by words and meaning of ix, made once per index.
func (f *Finder) hybridOf(ix *search.Index) *embedding.Hybrid {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hyIx != ix {
		f.hyIx, f.hybrid = ix, f.opts.Embeddings.Hybrid(ix)
	}
	return f.hybrid
}

// group returns every tool of the configured group name, or else of the server name, in
// catalog order, of those admits admits (all when nil). max, if above 0, bounds those that
// are not always-load.
func (f *Finder) group(cat *upstream.Catalog, name string, max int, admits func(*upstream.Tool) bool) ([]upstream.Tool, error) {
	patterns, configured := f.opts.Groups[name]
	var tools []upstream.Tool
	hidden := 0               // tools the group would unlock: always-load ones are listed anyway
	seen := map[string]bool{} // servers with a tool admits admits, when it is set
	for _, t := range cat.Tools {
		if admits != nil {
			if !admits(&t) {
				continue
			}
			seen[t.Server] = true
		}
		in := !configured && strings.EqualFold(t.Server, name)
		for _, p := range patterns {
			if ok, _ := path.Match(p, t.Exposed); ok {
				in = true
				break
			}
		}
		if in {
			tools = append(tools, t)
			if !t.AlwaysLoad {
				hidden++
			}
		}
	}
	statuses := f.src.Statuses()
	if admits != nil {
		// A server none of whose tools the caller may use does not exist for them.
		statuses = slices.DeleteFunc(statuses, func(st upstream.Status) bool { return !seen[st.Name] })
	}
	if !configured && len(tools) == 0 && !slices.ContainsFunc(statuses, func(st upstream.Status) bool { return strings.EqualFold(st.Name, name) }) {
		var known []string
		for g := range f.opts.Groups {
			known = append(known, g)
		}
		for _, st := range statuses {
			known = append(known, st.Name)
		}
		slices.Sort(known)
		return nil, fmt.Errorf("no server or group is named %q; known: %s", name, strings.Join(known, ", "))
	}
	if max > 0 && hidden > max {
		return nil, fmt.Errorf("group:%s has %d tools to unlock, more than a session keeps unlocked (%d, maxUnlocked in toolsift's config); search within it with keywords, or server:%s and keywords", name, hidden, max, name)
	}
	return tools, nil
}

// Index builds the search index of a catalog.
func Index(cat *upstream.Catalog) *search.Index { return search.NewIndex(Docs(cat)) }

// Docs converts a catalog's tools to search documents.
func Docs(cat *upstream.Catalog) []search.Doc {
	docs := make([]search.Doc, 0, len(cat.Tools))
	for _, t := range cat.Tools {
		docs = append(docs, Doc(t))
	}
	return docs
}

// Doc converts an upstream tool to a search document.
func Doc(t upstream.Tool) search.Doc {
	return search.Doc{
		Name: t.Exposed, Tool: t.Name, Server: t.Server, Description: t.Description,
		Keywords: t.Keywords, Params: search.ParamsFromSchema(t.InputSchema),
	}
}

// Ranker returns Find as a search.Ranker, for the evaluation: a query ranks exactly as
// tool_search ranks it for a client that cannot sample.
func (f *Finder) Ranker(ctx context.Context) search.Ranker { return ranker{ctx: ctx, f: f} }

type ranker struct {
	ctx context.Context
	f   *Finder
}

func (r ranker) Search(q search.Query, limit int) ([]search.Hit, []string) {
	res, _ := r.f.Find(r.ctx, Request{Query: q, Limit: limit})
	hits := make([]search.Hit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = search.Hit{Name: h.Tool.Exposed, Score: h.Score}
	}
	return hits, res.Unknown
}

func (r ranker) Doc(name string) (search.Doc, bool) {
	t, ok := r.f.src.Catalog().Lookup(name)
	if !ok {
		return search.Doc{}, false
	}
	return Doc(t), true
}

// Static is a Source of one catalog, whose servers have all started: tools read from files.
type Static struct {
	Tools *upstream.Catalog
}

func (s Static) Catalog() *upstream.Catalog           { return s.Tools }
func (s Static) Statuses() []upstream.Status          { return nil }
func (s Static) WaitStarted(context.Context) []string { return nil }
