package embedding

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsift/toolsift/search"
)

// Options configures an Engine. The zero value of each field but URL and Model means its
// documented default.
type Options struct {
	// URL is the base of an OpenAI-compatible API, such as https://api.openai.com/v1;
	// Model names the embedding model there.
	URL, Model string
	// APIKey, if set, is sent as Authorization: Bearer.
	APIKey string
	// Timeout bounds the wait for a query's vector, after which the search ranks by words
	// alone; 0 means 500ms.
	Timeout time.Duration
	// CacheDir is toolsift's cache directory: tool vectors are kept under
	// CacheDir/embeddings, so that each is computed once per text and model. Empty means
	// they are kept in memory only.
	CacheDir string
	// Logger receives why embeddings are not used, at most a line a minute; nil discards.
	Logger *slog.Logger
	// HTTPClient makes the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// BatchSize is how many tool texts one request embeds; 0 means 64.
	BatchSize int
	// BatchTimeout bounds one request for tool vectors; 0 means 60s.
	BatchTimeout time.Duration
	// AlwaysAsk makes every search ask for its query's vector, even right after a failure,
	// for the commands that measure a ranking: there, ranking a query by words alone
	// because another failed would measure the wrong thing. A server rests instead (see
	// health), so that a down API costs its searches nothing.
	AlwaysAsk bool

	// retry, if set, replaces minRetry, for tests.
	retry time.Duration
}

// Backoffs. After a failed request for tool vectors the worker waits, doubling from
// minRetry to maxRetry; after a failed query vector, searches rank by words alone at once,
// without asking, for a rest that doubles the same way from minRest to maxRest. A down API
// so costs a search nothing, and is asked again soon after it is back.
const (
	minRetry, maxRetry = 5 * time.Second, 5 * time.Minute
	minRest, maxRest   = 5 * time.Second, 2 * time.Minute
	// logEvery spaces the log lines of a failure that goes on.
	logEvery = time.Minute
)

// Engine keeps the vectors of the tools it tracks, computing those it lacks in the
// background, and gets queries' vectors for Hybrid rankers. Its methods are safe for
// concurrent use.
type Engine struct {
	// Fixed at creation.
	opts   Options
	log    *slog.Logger
	client *Client
	cache  cache
	ctx    context.Context // ends at Close, and with it the worker and its requests
	cancel context.CancelFunc
	wake   chan struct{} // 1-buffered: the tracked tools changed
	done   chan struct{} // closed when the worker has returned
	closed sync.Once

	// gen counts changes to vectors, so that a Hybrid knows when to look again.
	gen atomic.Uint64

	mu sync.Mutex // guards the fields below
	// order holds the keys of the tracked texts in catalog order; texts maps them to the
	// texts.
	order []key
	texts map[key]string
	// vectors holds unit vectors of tracked texts, all of dimension dim (0 before the first).
	vectors map[key][]float32
	dim     int
	// fails counts the failed requests each text was in (see batch).
	fails map[key]int
	// failure is why the last request for tool vectors failed, nil once one succeeds;
	// succeeded tells whether one did since the tools last changed.
	failure   error
	succeeded bool
	// progress is closed and replaced whenever vectors or failure change, for Wait.
	progress chan struct{}

	queries health
}

// New returns an engine for the API and model of opts, and starts its worker; Close stops
// it.
func New(opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Timeout == 0 {
		opts.Timeout = 500 * time.Millisecond
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = 64
	}
	if opts.BatchTimeout == 0 {
		opts.BatchTimeout = 60 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Engine{
		opts: opts, log: opts.Logger, client: NewClient(opts.URL, opts.Model, opts.APIKey, opts.HTTPClient),
		cache: newCache(opts.CacheDir, opts.URL, opts.Model), ctx: ctx, cancel: cancel,
		wake: make(chan struct{}, 1), done: make(chan struct{}),
		texts: map[key]string{}, vectors: map[key][]float32{}, fails: map[key]int{}, progress: make(chan struct{}),
	}
	e.queries.log, e.queries.alwaysAsk = opts.Logger, opts.AlwaysAsk
	go e.run()
	return e
}

// Close stops the worker, cancelling its request, and waits for it. It is idempotent.
func (e *Engine) Close() error {
	e.closed.Do(e.cancel)
	<-e.done
	return nil
}

// Track sets the tools to have vectors for, as their search documents, and wakes the
// worker to compute the missing ones. It returns at once; vectors of tools no longer
// tracked are dropped from memory (not from disk).
func (e *Engine) Track(docs []search.Doc) {
	order := make([]key, 0, len(docs))
	texts := make(map[key]string, len(docs))
	for _, d := range docs {
		t := Text(d)
		k := keyOf(t)
		if _, dup := texts[k]; !dup {
			texts[k] = t
			order = append(order, k)
		}
	}
	e.mu.Lock()
	e.order, e.texts = order, texts
	for k := range e.vectors {
		if _, ok := texts[k]; !ok {
			delete(e.vectors, k)
		}
	}
	for k := range e.fails {
		if _, ok := texts[k]; !ok {
			delete(e.fails, k)
		}
	}
	e.failure, e.succeeded = nil, false
	e.changedLocked()
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// changedLocked tells Hybrids and Wait that vectors or failure changed.
func (e *Engine) changedLocked() {
	e.gen.Add(1)
	close(e.progress)
	e.progress = make(chan struct{})
}

// Wait waits until every tracked tool has a vector, and returns nil then. It returns an
// error, saying how many have none and why, when the worker is stuck (its last request
// failed, and either none succeeded since the tools changed or every tool left has failed
// before), when ctx ends, or when the engine is closed. The commands that measure a
// ranking wait; a server never does.
func (e *Engine) Wait(ctx context.Context) error {
	for {
		e.mu.Lock()
		missing, tried := e.missingLocked()
		total, failure, stuck, progress := len(e.order), e.failure, e.failure != nil && (!e.succeeded || tried == missing), e.progress
		e.mu.Unlock()
		switch {
		case missing == 0:
			return nil
		case stuck:
			return fmt.Errorf("%d of %d tools have no vector: %w", missing, total, failure)
		}
		select {
		case <-progress:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tools have no vector yet: %w", missing, total, context.Cause(ctx))
		case <-e.done:
			return fmt.Errorf("%d of %d tools have no vector: the engine is closed", missing, total)
		}
	}
}

// missingLocked counts the tracked texts without a vector, and those of them that were in
// a failed request.
func (e *Engine) missingLocked() (missing, tried int) {
	for _, k := range e.order {
		if e.vectors[k] == nil {
			missing++
			if e.fails[k] > 0 {
				tried++
			}
		}
	}
	return missing, tried
}

// QueryFailures returns how many searches were ranked by words alone because the query's
// vector could not be had, and the last reason.
func (e *Engine) QueryFailures() (int, error) {
	h := &e.queries
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total, h.err
}

// run is the worker: it computes the missing vectors of the tracked tools, first from the
// disk cache, then from the API in batches, and waits for the next change.
func (e *Engine) run() {
	defer close(e.done)
	checked := map[key]bool{} // keys looked up on disk already
	retry := time.Duration(0)
	var logged time.Time // the last line about a failure
	var round struct {
		start            time.Time
		cached, computed int
	}
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-e.wake:
		}
		for e.ctx.Err() == nil {
			if round.start.IsZero() {
				round.start = time.Now()
			}
			round.cached += e.loadCached(checked)
			batch, texts := e.batch()
			if len(batch) == 0 {
				if round.cached+round.computed > 0 {
					e.mu.Lock()
					tools := len(e.order)
					e.mu.Unlock()
					e.log.Info("tool vectors ready", "tools", tools, "from_cache", round.cached, "computed", round.computed,
						"duration_ms", time.Since(round.start).Milliseconds())
				}
				round.start, round.cached, round.computed = time.Time{}, 0, 0
				break
			}
			err := e.embed(batch, texts)
			if err == nil {
				round.computed += len(batch)
				if retry > 0 {
					e.log.Info("tool vectors computed again")
				}
				retry, logged = 0, time.Time{}
				continue
			}
			if e.ctx.Err() != nil {
				return
			}
			retry = min(max(2*retry, cmp.Or(e.opts.retry, minRetry)), maxRetry)
			e.mu.Lock()
			missing, _ := e.missingLocked()
			e.mu.Unlock()
			if time.Since(logged) >= logEvery {
				e.log.Warn("tool vectors not computed; those tools rank by words alone", "error", err, "missing", missing, "retry_in", retry)
				logged = time.Now()
			}
			t := time.NewTimer(retry)
			select {
			case <-e.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// loadCached moves into memory the vectors on disk of tracked texts that lack one, once
// per text, and returns how many.
func (e *Engine) loadCached(checked map[key]bool) int {
	e.mu.Lock()
	var todo []key
	for _, k := range e.order {
		if e.vectors[k] == nil && !checked[k] {
			todo = append(todo, k)
		}
	}
	e.mu.Unlock()
	if len(todo) == 0 {
		return 0
	}
	found := map[key][]float32{}
	for _, k := range todo {
		checked[k] = true
		v, err := e.cache.load(k)
		if err != nil {
			if !os.IsNotExist(err) {
				e.log.Debug("cached tool vector unreadable; computing it again", "error", err)
			}
			continue
		}
		found[k] = v
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k, v := range found {
		if _, tracked := e.texts[k]; !tracked || e.dim != 0 && len(v) != e.dim {
			continue
		}
		e.dim = len(v)
		e.vectors[k] = v
		n++
	}
	if n > 0 {
		e.changedLocked()
	}
	return n
}

// batch picks the next texts to embed: those that failed least often first, in catalog
// order, up to BatchSize halved once per failure. A text the API refuses thus sinks below
// the others, and is retried in ever smaller batches until it fails alone, so that it never
// holds back the rest; a down API only delays them.
func (e *Engine) batch() ([]key, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var todo []key
	for _, k := range e.order {
		if e.vectors[k] == nil {
			todo = append(todo, k)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(todo, func(a, b key) int { return cmp.Compare(e.fails[a], e.fails[b]) })
	f := e.fails[todo[0]]
	size := max(1, e.opts.BatchSize>>min(f, 30))
	var texts []string
	for i, k := range todo {
		if i == size || e.fails[k] != f {
			todo = todo[:i]
			break
		}
		texts = append(texts, e.texts[k])
	}
	return todo, texts
}

// embed computes the vectors of one batch, and keeps them in memory and on disk.
func (e *Engine) embed(batch []key, texts []string) error {
	ctx, cancel := context.WithTimeout(e.ctx, e.opts.BatchTimeout)
	defer cancel()
	vs, err := e.client.Embed(ctx, texts)
	if err == nil {
		e.mu.Lock()
		if e.dim != 0 && len(vs[0]) != e.dim {
			err = fmt.Errorf("embeddings: vectors of %d dimensions, but the others have %d (if the model changed, remove %s)", len(vs[0]), e.dim, e.cache.dir)
		}
		e.mu.Unlock()
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("embeddings: no answer within %v", e.opts.BatchTimeout)
		}
		e.mu.Lock()
		for _, k := range batch {
			e.fails[k]++
		}
		e.failure = err
		e.changedLocked()
		e.mu.Unlock()
		return err
	}
	for i := range vs {
		vs[i] = unit(vs[i])
	}
	var saveErr error
	for i, k := range batch {
		if err := e.cache.save(k, vs[i]); err != nil && saveErr == nil {
			saveErr = err
		}
	}
	if saveErr != nil {
		e.log.Warn("tool vectors not cached on disk; they will be computed again next time", "error", saveErr)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.dim = len(vs[0])
	for i, k := range batch {
		if _, tracked := e.texts[k]; tracked {
			e.vectors[k] = vs[i]
		}
	}
	e.failure, e.succeeded = nil, true
	e.changedLocked()
	return nil
}

// errResting is why a search does not ask for its query's vector after a recent failure.
var errResting = errors.New("embeddings: resting after a failure")

// query returns the unit vector of a query's text, or why there is none: the API failed,
// did not answer within Timeout, answered garbage or vectors of another dimension than the
// tools', or failed recently (see health). Only a failure of the API counts against it;
// ctx ending is the caller's.
func (e *Engine) query(ctx context.Context, text string) ([]float32, error) {
	if err := e.queries.resting(); err != nil {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	vs, err := e.client.Embed(qctx, []string{text})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil && qctx.Err() != nil {
		err = fmt.Errorf("embeddings: no answer within %v", e.opts.Timeout)
	}
	if err == nil {
		e.mu.Lock()
		dim := e.dim
		e.mu.Unlock()
		if len(vs[0]) != dim {
			err = fmt.Errorf("embeddings: the query's vector has %d dimensions, the tools' %d", len(vs[0]), dim)
		}
	}
	if err != nil {
		e.queries.failed(err)
		return nil, err
	}
	e.queries.ok()
	return unit(vs[0]), nil
}

// unit scales v to length 1, so that a dot product is the cosine.
func unit(v []float32) []float32 {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	inv := 1 / math.Sqrt(norm)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
