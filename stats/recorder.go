package stats

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Def is one tool's definition as a client is sent it, and its server ("" for toolsift's
// own tools).
type Def struct {
	Server string
	Raw    []byte
}

// Listing is what a model request carried: the tools a session had listed then, and, for
// comparison, every tool of the catalog, as listing them all directly would have sent them.
type Listing struct {
	// Catalog identifies the catalog All lists; All is called once per catalog, on the
	// Recorder's goroutine.
	Catalog any
	All     func() []Def
	Listed  []Def
}

// Tool names a tool called: its exposed name, its server, and its name there.
type Tool struct {
	Exposed, Server, Name string
}

// Recorder counts a process's sessions and writes the counts to a Store a few times a
// second. Its methods never wait for the store or the tokenizer: they queue, and one
// goroutine of the Recorder's own counts and writes.
type Recorder struct {
	// Fixed at creation.
	store  *Store // nil counts without keeping
	log    *slog.Logger
	now    func() time.Time
	events chan func()
	flush  chan chan struct{}
	done   chan struct{} // closed by Close
	ran    chan struct{} // closed as run returns
	prefix string        // starts this process's search keys' unique part

	closeOnce sync.Once
	dropped   atomic.Int64 // events dropped because the queue was full

	mu     sync.Mutex // guards direct
	direct directCount

	// Owned by run's goroutine.
	counter counter
	pend    batch
	chains  map[string][]*Search // a session's searches not resolved yet, oldest first
	seq     int
	// backoff is the wait after the last failed write, retryAt when the next may be tried,
	// warned when one was last logged.
	backoff         time.Duration
	retryAt, warned time.Time
}

// directCount is a catalog's tokens listed directly, in all and by server.
type directCount struct {
	catalog any
	tools   int
	tokens  int64
	servers map[string]int64
}

// RecorderOptions configure a Recorder; zero values mean the defaults.
type RecorderOptions struct {
	Logger *slog.Logger     // nil discards
	Now    func() time.Time // nil is time.Now
	// Every is how often counts are written; 0 means 500ms.
	Every time.Duration
}

// NewRecorder starts a recorder writing to store (nil: counting for Direct only).
func NewRecorder(store *Store, o RecorderOptions) *Recorder {
	r := &Recorder{store: store, log: o.Logger, now: o.Now, events: make(chan func(), 4096),
		flush: make(chan chan struct{}), done: make(chan struct{}), ran: make(chan struct{}), chains: map[string][]*Search{},
		prefix: fmt.Sprintf("%d.%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	every := o.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	go r.run(every)
	return r
}

// queue hands fn to the recorder's goroutine, or drops it if the queue is full: counting
// never slows a request.
func (r *Recorder) queue(fn func()) {
	if r == nil {
		return
	}
	select {
	case <-r.done:
	case r.events <- fn:
	default:
		r.dropped.Add(1)
	}
}

func (r *Recorder) run(every time.Duration) {
	defer close(r.ran)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case fn := <-r.events:
			fn()
		case <-t.C:
			r.write()
		case ack := <-r.flush:
			r.drain()
			r.retryAt = time.Time{}
			r.write()
			close(ack)
		case <-r.done:
			r.drain()
			for session := range r.chains {
				r.ended(session)
			}
			r.retryAt = time.Time{}
			r.write()
			return
		}
	}
}

func (r *Recorder) drain() {
	for {
		select {
		case fn := <-r.events:
			fn()
		default:
			return
		}
	}
}

// write writes what was counted since the last write; on failure it keeps it for the next,
// and waits longer each time (up to maxBackoff) before trying again.
func (r *Recorder) write() {
	if n := r.dropped.Swap(0); n > 0 {
		r.log.Warn("stats: events dropped, the queue was full", "dropped", n)
	}
	if r.store == nil || r.pend.empty() {
		r.pend = batch{}
		return
	}
	now := time.Now()
	if now.Before(r.retryAt) {
		return
	}
	err := r.store.write(&r.pend, r.now())
	if err == nil {
		r.pend, r.backoff, r.retryAt = batch{}, 0, time.Time{}
		return
	}
	r.backoff = min(max(2*r.backoff, time.Second), maxBackoff)
	r.retryAt = now.Add(r.backoff)
	if now.Sub(r.warned) >= maxBackoff {
		r.warned = now
		r.log.Warn("stats not written; keeping them to try again", "error", err, "retry_in", r.backoff)
	}
	if len(r.pend.searches) > maxSearches {
		r.pend.searches = nil // the counts stay; searches one by one are what grows
	}
}

// maxBackoff is the longest wait between two tries of a store that cannot be written, and
// the shortest between two warnings of it.
const maxBackoff = time.Minute

// Flush waits until everything recorded so far is written.
func (r *Recorder) Flush() {
	if r == nil {
		return
	}
	ack := make(chan struct{})
	select {
	case r.flush <- ack:
		<-ack
	case <-r.done:
	}
}

// Close resolves the searches still open as misses, writes what is left and stops. It is
// idempotent.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.closeOnce.Do(func() { close(r.done) })
	<-r.ran
}

// Direct returns the tools of the catalog counted last and their tokens listed directly,
// once one is counted. A catalog is counted in the background as it changes, so the figure
// may be a moment behind the catalog a request sees: close enough for a line a person
// reads, where waiting for the count would not be.
func (r *Recorder) Direct() (tools int, tokens int64, ok bool) {
	if r == nil {
		return 0, 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.direct.catalog == nil {
		return 0, 0, false
	}
	return r.direct.tools, r.direct.tokens, true
}

// Catalog has the recorder count a new catalog's tokens now, before a request needs them.
func (r *Recorder) Catalog(l Listing) {
	r.queue(func() { r.count(l) })
}

// Opened counts a session its client opened.
func (r *Recorder) Opened(client string) {
	at := r.nowOrZero()
	r.queue(func() { r.day(at).client(client).Sessions++ })
}

// Ended resolves the session's open search, if any, as a miss: it called nothing after.
func (r *Recorder) Ended(session string) {
	r.queue(func() { r.ended(session) })
}

// Searched records a tool_search, the model request it came from, and its result.
func (r *Recorder) Searched(session, client, query string, results []string, result []byte, l Listing) {
	at := r.nowOrZero()
	results = slices.Clone(results)
	if results == nil {
		results = []string{}
	}
	r.queue(func() {
		r.request(at, session, client, l)
		n := int64(r.counter.count(result))
		for _, t := range r.tallies(at, session, client) {
			t.Searches++
			t.Sent += n
		}
		chain := r.chains[session]
		if n := len(chain); n > 0 && chain[n-1].Outcome == Pending {
			r.resolve(chain[n-1], Again, Tool{})
		}
		r.seq++
		sr := &Search{Key: fmt.Sprintf("%s/%s/%d", at.UTC().Format(keyTime), r.prefix, r.seq),
			Time: at, Session: r.sessionID(session), Client: client, Query: query, Results: results}
		if session != "" {
			// A request with no session (2026-07-28) has nothing to follow it by.
			r.chains[session] = append(chain, sr)
		}
		r.put(sr)
	})
}

// Calling records a call of t as it starts, and the model request it came from: it
// resolves the session's open searches. t.Server is empty for a tool not found.
func (r *Recorder) Calling(session, client string, t Tool, l Listing) {
	at := r.nowOrZero()
	r.queue(func() {
		r.request(at, session, client, l)
		chain := r.chains[session]
		if t.Server == "" || len(chain) == 0 {
			return // a tool unknown resolves nothing: the model may find the right one next
		}
		last := chain[len(chain)-1]
		if last.Outcome == Pending && slices.Contains(last.Results, t.Exposed) {
			r.resolve(last, Hit, t)
		} else if last.Outcome == Pending {
			r.resolve(last, Other, t)
		}
		for _, sr := range chain[:len(chain)-1] {
			// Searched again, and this is what it led to.
			sr.Used, sr.UsedServer, sr.UsedName = t.Exposed, t.Server, t.Name
			r.put(sr)
		}
		delete(r.chains, session)
	})
}

// Called records how a call of a server's tool ended (an audit outcome); server is empty
// for a tool not found.
func (r *Recorder) Called(server, outcome string) {
	if server == "" {
		return
	}
	at := r.nowOrZero()
	r.queue(func() {
		st := r.day(at).server(server)
		if st.Calls == nil {
			st.Calls = map[string]int{}
		}
		st.Calls[outcome]++
	})
}

func (r *Recorder) nowOrZero() time.Time {
	if r == nil {
		return time.Time{}
	}
	return r.now()
}

func (r *Recorder) ended(session string) {
	chain := r.chains[session]
	if n := len(chain); n > 0 && chain[n-1].Outcome == Pending {
		r.resolve(chain[n-1], Nothing, Tool{})
	}
	delete(r.chains, session)
}

// resolve sets a search's outcome and counts it on the search's day.
func (r *Recorder) resolve(sr *Search, outcome string, t Tool) {
	sr.Outcome = outcome
	d := r.day(sr.Time)
	tallies := []*Tally{d.client(sr.Client), d.session(sr.Session, sr.Client)}
	switch outcome {
	case Hit:
		sr.Called = t.Exposed
		for _, t := range tallies {
			t.Hits++
		}
	default:
		if t.Exposed != "" {
			sr.Used, sr.UsedServer, sr.UsedName = t.Exposed, t.Server, t.Name
		}
		for _, t := range tallies {
			t.Misses++
		}
	}
	r.put(sr)
}

func (r *Recorder) put(sr *Search) {
	if r.pend.searches == nil {
		r.pend.searches = map[string]*Search{}
	}
	cp := *sr
	cp.Results = slices.Clone(sr.Results)
	r.pend.searches[sr.Key] = &cp
}

func (r *Recorder) day(at time.Time) *Day {
	key := at.UTC().Format(time.DateOnly)
	if r.pend.days == nil {
		r.pend.days = map[string]*Day{}
	}
	d := r.pend.days[key]
	if d == nil {
		d = &Day{}
		r.pend.days[key] = d
	}
	return d
}

// sessionID is a session's ID as kept: unique across processes, where the proxy's is
// unique in its process only (every stdio session is "stdio").
func (r *Recorder) sessionID(session string) string {
	if session == "" {
		return ""
	}
	return r.prefix + "/" + session
}

// tallies are the tallies a request of session counts in: its client's, and its session's.
func (r *Recorder) tallies(at time.Time, session, client string) []*Tally {
	d := r.day(at)
	if session == "" {
		return []*Tally{d.client(client)}
	}
	return []*Tally{d.client(client), d.session(r.sessionID(session), client)}
}

// request counts one model request: what it carried against what listing every tool
// would have.
func (r *Recorder) request(at time.Time, session, client string, l Listing) {
	direct := r.count(l)
	var listed int64
	sent := map[string]int64{}
	for _, d := range l.Listed {
		n := int64(r.counter.count(d.Raw))
		listed += n
		sent[d.Server] += n
	}
	for _, t := range r.tallies(at, session, client) {
		t.Requests++
		t.Direct += direct.tokens
		t.Sent += listed
	}
	for server, n := range direct.servers {
		st := r.day(at).server(server)
		st.Direct += n
		st.Sent += sent[server]
	}
}

// count returns the catalog's direct count, counting it if it is new.
func (r *Recorder) count(l Listing) directCount {
	r.mu.Lock()
	cur := r.direct
	r.mu.Unlock()
	if cur.catalog == l.Catalog || l.All == nil {
		return cur
	}
	d := directCount{catalog: l.Catalog, servers: map[string]int64{}}
	for _, def := range l.All() {
		n := int64(r.counter.count(def.Raw))
		d.tools++
		d.tokens += n
		d.servers[def.Server] += n
	}
	r.mu.Lock()
	r.direct = d
	r.mu.Unlock()
	return d
}
