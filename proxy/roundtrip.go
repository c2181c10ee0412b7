package proxy

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/internal/identity"
)

// A client on protocol 2026-07-28 has no session for a server to send requests on: a
// server that needs input mid-request answers with an input_required result, and the
// client repeats the request with the answers (multi round-trip, SEP-2322). Upstream
// servers are reached on 2025-11-25, where they ask toolsift with elicitation/create,
// sampling/createMessage and roots/list instead. The bridge joins the two: what an upstream
// asks during such a client's request becomes that request's input_required result, and
// the upstream request waits, on this process, for the client to come back with the
// answers. The requestState is a random name for the waiting call: one that names none is
// refused, and with replicas (Relay) the answers reach the process that holds the call,
// whichever the client's next request reached.

// gatherWindow is how long the bridge waits for more of an upstream's requests once one
// has come. A server on 2025-11-25 asks one request at a time with nothing to say that
// another follows; those it sends together (mcp-go's multi round-trip bridge does) reach
// the client as one round.
const gatherWindow = 20 * time.Millisecond

// bridge holds the calls of 2026-07-28 clients that wait for their client's input.
type bridge struct {
	wait  time.Duration // how long a call waits for its client to come back
	max   int           // calls one caller may have running (maxCalls)
	relay Relay         // reaches calls held by other processes; nil without replicas
	log   *slog.Logger
	wg    sync.WaitGroup // the calls running upstream

	mu sync.Mutex // guards live, calls and closed
	// live holds every call running here; calls, those a client may continue now, by
	// their requestState. A request that continues one takes it out of calls until the
	// call asks again or ends, so that a state is good for one request at a time.
	live   map[*roundTrip]struct{}
	calls  map[string]*roundTrip
	closed bool
}

// Relay reaches the process that holds a call waiting for a 2026-07-28 client's input
// (Options.Relay): with replicas, the client's next request may reach another.
type Relay interface {
	// Hold records, for ttl, that this process holds the call named id.
	Hold(ctx context.Context, id string, ttl time.Duration) error
	// Release forgets that.
	Release(id string)
	// Send passes msg to the process that holds id and returns its answer; held is false
	// when no live process holds it.
	Send(ctx context.Context, id string, msg []byte) (answer []byte, held bool, err error)
	// Serve answers, with handle, what other processes Send to this one, until ctx ends.
	Serve(ctx context.Context, handle func(ctx context.Context, id string, msg []byte) []byte)
}

func newBridge(wait time.Duration, max int, relay Relay, log *slog.Logger) *bridge {
	return &bridge{wait: wait, max: max, relay: relay, log: log, live: map[*roundTrip]struct{}{}, calls: map[string]*roundTrip{}}
}

// errBusy refuses a call past the caller's maxCalls.
var errBusy = errors.New("too many calls in flight")

// roundTrip is one request of a 2026-07-28 client whose upstream call may ask for input.
type roundTrip struct {
	id     string // its requestState: a new one each round (guarded by bridge.mu)
	held   bool   // a Relay was told of it (guarded by bridge.mu)
	who    string // the caller
	owner  string // the caller and the request it continues (see bridge.run)
	caps   mcp.ClientCapabilities
	asks   chan *ask     // what the upstream asks, to the request waiting for the call
	done   chan struct{} // closed once res and err are set
	res    any
	err    error
	cancel context.CancelFunc

	mu      sync.Mutex // guards waiting, next and notify
	waiting map[string]*ask
	next    int
	notify  func(json.RawMessage) // the progress of the request waiting now, if any
}

// ask is one request of the upstream server for its client.
type ask struct {
	req     mcp.InputRequest
	missing string                 // the capability the client did not declare, if any
	answer  chan mcp.InputResponse // receives the client's answer (buffered)
}

type roundTripKey struct{}

// roundTripOf returns the round trip a call's context belongs to, or nil.
func roundTripOf(ctx context.Context) *roundTrip {
	rt, _ := ctx.Value(roundTripKey{}).(*roundTrip)
	return rt
}

// capabilitiesOf returns what a 2026-07-28 request's client declared it can do.
func capabilitiesOf(ctx context.Context) mcp.ClientCapabilities {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
		return *info.ClientCapabilities
	}
	return mcp.ClientCapabilities{}
}

// run serves a request of a 2026-07-28 client: it starts call, or, given a requestState,
// takes the answers to the call that state names. It returns the call's outcome, or the
// input the call waits for.
//
// notify, if not nil, receives the call's progress while this request waits for it: each
// round is a request of its own, with its own progress token.
func (b *bridge) run(ctx context.Context, who identity.User, what string, p mcp.MultiRoundTripParams, notify func(json.RawMessage), call func(context.Context) (any, error)) (any, *mcp.MultiRoundTripResult, error) {
	caller := who.Kind.String() + "\x00" + who.Key
	owner := what + "\x00" + caller
	if p.RequestState == "" {
		rt, err := b.start(ctx, caller, owner, notify, call)
		if err != nil {
			return nil, nil, err
		}
		return b.await(ctx, rt, notify)
	}
	b.mu.Lock()
	_, here := b.calls[p.RequestState]
	b.mu.Unlock()
	if !here && b.relay != nil && validState(p.RequestState) {
		return b.relayed(ctx, owner, p)
	}
	return b.resume(ctx, owner, p, notify)
}

// resume passes a client's answers to the call they continue, and waits for it.
func (b *bridge) resume(ctx context.Context, owner string, p mcp.MultiRoundTripParams, notify func(json.RawMessage)) (any, *mcp.MultiRoundTripResult, error) {
	b.mu.Lock()
	rt := b.calls[p.RequestState]
	if rt == nil || rt.owner != owner {
		b.mu.Unlock()
		return nil, nil, errStale(b.wait)
	}
	delete(b.calls, p.RequestState) // this request's now
	b.mu.Unlock()
	// This request waits for the call from the moment its answers are handed over: the
	// call may report progress at once.
	rt.mu.Lock()
	rt.notify = notify
	rt.mu.Unlock()
	left, err := rt.take(p.InputResponses)
	if err != nil || len(left) > 0 {
		rt.mu.Lock()
		rt.notify = nil
		rt.mu.Unlock()
		// Nothing was handed over: the same state goes on asking for what is unanswered
		// (SEP-2322).
		b.mu.Lock()
		b.calls[p.RequestState] = rt
		b.mu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		return nil, &mcp.MultiRoundTripResult{InputRequests: left, RequestState: p.RequestState}, nil
	}
	return b.await(ctx, rt, notify)
}

// errStale answers a requestState that names no call of this caller's: a made-up or
// changed one, another caller's, or one whose call ended.
func errStale(wait time.Duration) error {
	return fmt.Errorf("requestState names no call of yours waiting for input (a call waits as long as its server's callTimeout, %s at most); make the request again without requestState and inputResponses: %w", wait, mcp.ErrInvalidParams)
}

// validState reports whether s could be a requestState the bridge made.
func validState(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == stateBytes
}

// stateBytes is the size of a requestState's randomness: it cannot be guessed.
const stateBytes = 16

func (b *bridge) start(ctx context.Context, caller, owner string, notify func(json.RawMessage), call func(context.Context) (any, error)) (*roundTrip, error) {
	// notify is set before the call starts: progress may come at once.
	rt := &roundTrip{id: newState(), who: caller, owner: owner, caps: capabilitiesOf(ctx),
		asks: make(chan *ask), done: make(chan struct{}), waiting: map[string]*ask{}, notify: notify}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("toolsift is shutting down")
	}
	running := 0
	for other := range b.live {
		if other.who == caller {
			running++
		}
	}
	if running >= b.max {
		b.mu.Unlock()
		return nil, errBusy
	}
	// The call outlives this request when the upstream asks for input: it waits for the
	// client's next one.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.wait)
	rt.cancel = cancel
	b.live[rt] = struct{}{}
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		defer cancel()
		rt.res, rt.err = call(context.WithValue(cctx, roundTripKey{}, rt))
		close(rt.done)
		// A call nobody comes back for is forgotten once it ends.
		<-cctx.Done()
		b.forget(rt)
		b.mu.Lock()
		delete(b.live, rt)
		b.mu.Unlock()
	}()
	return rt, nil
}

// await waits for the call to end or to ask for input.
func (b *bridge) await(ctx context.Context, rt *roundTrip, notify func(json.RawMessage)) (any, *mcp.MultiRoundTripResult, error) {
	rt.mu.Lock()
	rt.notify = notify
	rt.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		rt.notify = nil
		rt.mu.Unlock()
	}()
	var asked []*ask
	var quiet <-chan time.Time
wait:
	for {
		select {
		case a := <-rt.asks:
			asked = append(asked, a)
			quiet = time.After(gatherWindow)
		case <-quiet:
			break wait
		case <-rt.done:
			if len(asked) == 0 {
				rt.cancel()
				b.forget(rt)
				return rt.res, nil, rt.err
			}
			break wait
		case <-ctx.Done():
			// The client gave up on the request: so does the call.
			rt.cancel()
			b.forget(rt)
			return nil, nil, ctx.Err()
		}
	}
	missing := ""
	rt.mu.Lock()
	for _, a := range asked {
		if a.missing != "" {
			missing = a.missing
			continue
		}
		rt.next++
		rt.waiting[string(a.req.Method)+"-"+strconv.Itoa(rt.next)] = a
	}
	rt.mu.Unlock()
	left, _ := rt.take(nil)
	if len(left) == 0 {
		// The upstream needs what the client cannot give: the call cannot go on.
		rt.cancel()
		b.forget(rt)
		if missing != "" {
			return nil, nil, mcp.MissingRequiredClientCapabilityError{Capability: missing}
		}
		return rt.res, nil, rt.err
	}
	// Each round has a state of its own: one already answered continues nothing.
	b.mu.Lock()
	old := rt.id
	delete(b.calls, old)
	rt.id = newState()
	b.calls[rt.id] = rt
	state := rt.id
	rt.held = b.relay != nil
	b.mu.Unlock()
	if b.relay != nil {
		b.relay.Release(old)
		// The client's next request may reach another replica: it is to find this one.
		if err := b.relay.Hold(ctx, state, b.wait); err != nil {
			b.log.Warn("a call waiting for input cannot be found by other replicas", "error", err)
		}
	}
	return nil, &mcp.MultiRoundTripResult{InputRequests: left, RequestState: state}, nil
}

// newState makes a requestState: random, so that it cannot be guessed.
func newState() string {
	b := make([]byte, stateBytes)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// take hands the client's answers to the requests waiting for them, and returns those
// still unanswered. Answers to nothing waiting are ignored; one that does not answer its
// request is an error.
func (rt *roundTrip) take(responses mcp.InputResponses) (mcp.InputRequests, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	// Every answer is checked before any is handed over: a refused retry changes nothing.
	answered := map[string]mcp.InputResponse{}
	for key, a := range rt.waiting {
		r, ok := responses[key]
		if !ok {
			continue
		}
		if err := r.DecodeFor(a.req.Method); err != nil || r.Elicitation == nil && r.Sampling == nil && r.Roots == nil {
			return nil, fmt.Errorf("inputResponses[%q] is not an answer to %s; answer it again with the same requestState: %w", key, a.req.Method, mcp.ErrInvalidParams)
		}
		answered[key] = r
	}
	for key, r := range answered {
		rt.waiting[key].answer <- r
		delete(rt.waiting, key)
	}
	left := mcp.InputRequests{}
	for key, a := range rt.waiting {
		left[key] = a.req
	}
	return left, nil
}

// progress passes the call's progress to the request that waits for it now; while none
// does, it is dropped.
func (rt *roundTrip) progress(params json.RawMessage) {
	rt.mu.Lock()
	notify := rt.notify
	rt.mu.Unlock()
	if notify != nil {
		notify(params)
	}
}

// ask passes an upstream's request to the client and waits for its answer. A request the
// client declared no capability for is not passed: missing names that capability.
func (rt *roundTrip) ask(ctx context.Context, req mcp.InputRequest, missing string) (mcp.InputResponse, error) {
	a := &ask{req: req, missing: missing, answer: make(chan mcp.InputResponse, 1)}
	select {
	case rt.asks <- a:
	case <-ctx.Done():
		return mcp.InputResponse{}, ctx.Err()
	}
	if missing != "" {
		return mcp.InputResponse{}, mcp.MissingRequiredClientCapabilityError{Capability: missing}
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return mcp.InputResponse{}, ctx.Err()
	}
}

func (rt *roundTrip) elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e := rt.caps.Elicitation
	if e == nil || req.Params.Mode == mcp.ElicitationModeURL && e.URL == nil {
		// A client that cannot ask its user declines for them: the safe answer to a
		// server that asks before it acts.
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	r, err := rt.ask(ctx, mcp.NewElicitationInputRequest(req.Params), "")
	if err != nil {
		return nil, err
	}
	return r.Elicitation, nil
}

func (rt *roundTrip) sample(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	missing := ""
	if rt.caps.Sampling == nil {
		missing = "sampling"
	}
	r, err := rt.ask(ctx, mcp.NewSamplingInputRequest(req.CreateMessageParams), missing)
	if err != nil {
		return nil, err
	}
	return r.Sampling, nil
}

func (rt *roundTrip) roots(ctx context.Context) (*mcp.ListRootsResult, error) {
	missing := ""
	if rt.caps.Roots == nil {
		missing = "roots"
	}
	r, err := rt.ask(ctx, mcp.NewRootsInputRequest(), missing)
	if err != nil {
		return nil, err
	}
	return r.Roots, nil
}

// forget makes rt's state continue nothing.
func (b *bridge) forget(rt *roundTrip) {
	b.mu.Lock()
	id, held := rt.id, rt.held
	if b.calls[id] == rt {
		delete(b.calls, id)
	}
	b.mu.Unlock()
	if held {
		b.relay.Release(id)
	}
}

// close ends the calls running and waits for them. It is idempotent.
func (b *bridge) close() {
	b.mu.Lock()
	b.closed = true
	for rt := range b.live {
		rt.cancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
