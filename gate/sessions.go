package gate

import (
	"context"
	"crypto/subtle"
	"net/http"
	"sync"
)

// owners binds each HTTP session to the credential that opened it, and keeps the number of
// sessions within their limits: in total, and per credential (one per token; without
// tokens, every session has the zero credential).
type owners struct {
	mu      sync.Mutex          // guards the fields below
	m       map[string][32]byte // session ID -> the credential that opened it
	opened  map[[32]byte]int    // sessions open or being opened, by credential
	total   int                 // the sum of opened
	maxAll  int                 // bounds total; 0: no bound; fixed at creation
	maxEach int                 // bounds each of opened; 0: no bound; fixed at creation
}

func newOwners(all, each int) *owners {
	return &owners{m: map[string][32]byte{}, opened: map[[32]byte]int{}, maxAll: all, maxEach: each}
}

// reserve takes a place for a session that cred is opening; it reports false when a limit
// is reached. The place is bind's once the session has an ID, else release's.
func (o *owners) reserve(cred [32]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.maxAll > 0 && o.total >= o.maxAll || o.maxEach > 0 && o.opened[cred] >= o.maxEach {
		return false
	}
	o.total++
	o.opened[cred]++
	return true
}

// release gives back a place reserve took for a session that did not open.
func (o *owners) release(cred [32]byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.releaseLocked(cred)
}

func (o *owners) releaseLocked(cred [32]byte) {
	o.total--
	if o.opened[cred]--; o.opened[cred] <= 0 {
		delete(o.opened, cred)
	}
}

// bind records that the session id was opened with cred, in a place reserve took. It
// reports false if id was already bound (the place is then the caller's to release).
func (o *owners) bind(id string, cred [32]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.m[id]; ok {
		return false
	}
	o.m[id] = cred
	return true
}

// allows reports whether cred may use session id: the one that opened it, or any for a
// session whose opening was not seen (mcp-go answers an unknown one with 404). seen says
// whether its opening was seen here.
func (o *owners) allows(id string, cred [32]byte) (allowed, seen bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.m[id]
	return !ok || subtle.ConstantTimeCompare(owner[:], cred[:]) == 1, ok
}

// forget ends session id, freeing its place.
func (o *owners) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cred, ok := o.m[id]; ok {
		delete(o.m, id)
		o.releaseLocked(cred)
	}
}

// claim is a request's claim to the place the gate reserved for the session it opens.
// mcp-go issues a session ID with the answer to every initialize, an error too, and keeps
// that session until it idles out: so for an initialize (answered) the place is kept, and
// the session with it, only if the initialize succeeded. It travels in the request's
// context to the proxy's session hooks, which tell it what happened (see Handler).
type claim struct {
	cred     [32]byte
	owners   *owners
	answered bool // the session must be earned by a successful initialize

	mu     sync.Mutex // guards the fields below
	id     string     // the session's ID, once opened
	bound  bool       // the session took the reserved place
	earned bool       // its initialize succeeded
}

type claimKey struct{}

func claimOf(ctx context.Context) *claim {
	c, _ := ctx.Value(claimKey{}).(*claim)
	return c
}

func (c *claim) bind(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != "" {
		return
	}
	c.id, c.bound = id, c.owners.bind(id, c.cred)
}

func (c *claim) earn() {
	c.mu.Lock()
	c.earned = true
	c.mu.Unlock()
}

func (c *claim) state() (id string, bound, earned bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id, c.bound, c.earned
}

// discard is a response nobody reads: the gate's own requests to mcp-go.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header {
	if d.h == nil {
		d.h = http.Header{}
	}
	return d.h
}
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
