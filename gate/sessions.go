package gate

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"
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
// session whose opening was not seen (mcp-go answers an unknown one with 404).
func (o *owners) allows(id string, cred [32]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := o.m[id]
	return !ok || subtle.ConstantTimeCompare(owner[:], cred[:]) == 1
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

// passWriter passes a response through: the writers that watch or mend one embed it. SSE
// streams must reach the client as they are written, so it flushes.
type passWriter struct{ http.ResponseWriter }

func (w passWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the underlying writer.
func (w passWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idWriter gives the client back the big id of its request (see wrapBigID), in a JSON
// answer or an SSE stream.
type idWriter struct{ passWriter }

func (w idWriter) Write(p []byte) (int, error) {
	if _, err := w.passWriter.Write(unwrapBigID(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// claimer watches the response to a request that opens a session for the session's ID: the
// Mcp-Session-Id header of streamable HTTP, or the endpoint event of the legacy SSE stream
// ("data: /message?sessionId=ID"). It binds the ID to the place the gate reserved for it.
// mcp-go issues an ID with the answer to every initialize, an error too, and keeps that
// session until it idles out: so for an initialize (answered) the place is kept, and the
// session with it, only if the answer is a result.
type claimer struct {
	passWriter
	cred     [32]byte
	owners   *owners
	answered bool            // the session must be earned by a successful answer
	end      func(id string) // ends a session that was not earned
	id       string          // the ID seen, if any
	done     bool            // an ID was seen
	bound    bool            // and took the reserved place
	result   bool            // the answer was a result
	checked  bool            // the answer was read
}

func (c *claimer) WriteHeader(code int) {
	c.fromHeader()
	c.ResponseWriter.WriteHeader(code)
}

func (c *claimer) Write(p []byte) (int, error) {
	c.fromHeader()
	if !c.done {
		if _, rest, ok := bytes.Cut(p, []byte("sessionId=")); ok {
			end := bytes.IndexFunc(rest, func(r rune) bool { return !isSessionIDRune(r) })
			if end < 0 {
				end = len(rest)
			}
			c.claim(string(rest[:end]))
		}
	}
	if c.answered && !c.checked {
		c.checked = true
		c.result = isResult(p)
	}
	return c.ResponseWriter.Write(p)
}

func (c *claimer) fromHeader() {
	if id := c.Header().Get(server.HeaderKeySessionID); id != "" && !c.done {
		c.claim(id)
	}
}

func (c *claimer) claim(id string) {
	c.done, c.id = true, id
	c.bound = c.owners.bind(id, c.cred)
}

// settle gives the reserved place back if no session took it, and ends a session that an
// initialize did not earn. It runs once the request is served: for an SSE stream, once
// the stream has ended.
func (c *claimer) settle() {
	switch {
	case !c.bound:
		c.owners.release(c.cred)
	case c.answered && !c.result:
		c.owners.forget(c.id)
		c.end(c.id)
	}
}

// isResult reports whether an answer, as JSON or as the data of an SSE event, is a
// JSON-RPC result rather than an error.
func isResult(p []byte) bool {
	if i := bytes.IndexByte(p, '{'); i >= 0 {
		p = p[i:]
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	err := json.NewDecoder(bytes.NewReader(p)).Decode(&m)
	return err == nil && len(m.Result) > 0 && len(m.Error) == 0
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

func isSessionIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
}
