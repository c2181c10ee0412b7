package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/internal/identity"
)

// modernCtx is the context of a 2026-07-28 request whose client declared caps.
func modernCtx(caps mcp.ClientCapabilities) context.Context {
	return server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{Modern: true,
		ProtocolVersion: mcp.ProtocolVersion20260728, ClientCapabilities: &caps})
}

// asking is an upstream call that asks its client for a name, then for roots, and answers
// with what it got.
func asking(ctx context.Context) (any, error) {
	rt := roundTripOf(ctx)
	e, err := rt.elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "name?"}})
	if err != nil {
		return nil, err
	}
	r, err := rt.roots(ctx)
	if err != nil {
		return nil, err
	}
	out, _ := json.Marshal(map[string]any{"action": e.Action, "content": e.Content, "roots": len(r.Roots)})
	return json.RawMessage(out), nil
}

func answers(t *testing.T, asks *mcp.MultiRoundTripResult, bodies map[string]string) mcp.MultiRoundTripParams {
	t.Helper()
	p := mcp.MultiRoundTripParams{RequestState: asks.RequestState, InputResponses: mcp.InputResponses{}}
	for key, req := range asks.InputRequests {
		body, ok := bodies[string(req.Method)]
		if !ok {
			continue
		}
		var r mcp.InputResponse
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		p.InputResponses[key] = r
	}
	return p
}

func TestBridge(t *testing.T) {
	ann := identity.User{Kind: identity.Person, Key: "ann"}
	b := newBridge(time.Minute, 32, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(b.close)
	all := mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}, Roots: &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}}
	ctx := modernCtx(all)

	// Two rounds, one question each, then the outcome.
	_, asks, err := b.run(ctx, ann, "tools/call x", mcp.MultiRoundTripParams{}, nil, asking)
	if err != nil || asks == nil || len(asks.InputRequests) != 1 {
		t.Fatalf("round 1: %v %+v", err, asks)
	}
	state := asks.RequestState
	// Hostile and mistaken retries: each is refused or asked again, and the call goes on.
	hostile := []struct {
		name  string
		who   identity.User
		what  string
		p     mcp.MultiRoundTripParams
		code  error // the error wanted, or nil for the question asked again
		asked bool
	}{
		{"a made-up state", ann, "tools/call x", mcp.MultiRoundTripParams{RequestState: "AAAAAAAAAAAAAAAAAAAAAA"}, mcp.ErrInvalidParams, false},
		{"a changed state", ann, "tools/call x", mcp.MultiRoundTripParams{RequestState: state + "x"}, mcp.ErrInvalidParams, false},
		{"another caller", identity.User{Kind: identity.Person, Key: "bob"}, "tools/call x", mcp.MultiRoundTripParams{RequestState: state}, mcp.ErrInvalidParams, false},
		{"another tool", ann, "tools/call y", mcp.MultiRoundTripParams{RequestState: state}, mcp.ErrInvalidParams, false},
		{"no answers", ann, "tools/call x", mcp.MultiRoundTripParams{RequestState: state}, nil, true},
		{"answers to nothing asked", ann, "tools/call x", answers(t, &mcp.MultiRoundTripResult{RequestState: state, InputRequests: mcp.InputRequests{"other": asks.InputRequests[firstKey(asks)]}}, map[string]string{"elicitation/create": `{"action":"accept"}`}), nil, true},
		{"an answer that is no answer", ann, "tools/call x", answers(t, asks, map[string]string{"elicitation/create": `"yes"`}), mcp.ErrInvalidParams, false},
	}
	for _, tt := range hostile {
		_, again, err := b.run(ctx, tt.who, tt.what, tt.p, nil, asking)
		switch {
		case tt.code != nil && !errors.Is(err, tt.code):
			t.Errorf("%s: %v, want %v", tt.name, err, tt.code)
		case tt.asked && (err != nil || again == nil || again.RequestState != state || len(again.InputRequests) != 1):
			t.Errorf("%s: %v %+v, want the question asked again", tt.name, err, again)
		}
	}
	_, asks, err = b.run(ctx, ann, "tools/call x", answers(t, asks, map[string]string{"elicitation/create": `{"action":"accept","content":{"name":"Ada"}}`}), nil, asking)
	if err != nil || asks == nil {
		t.Fatalf("round 2: %v %+v", err, asks)
	}
	if asks.RequestState == state {
		t.Error("round 2 has round 1's requestState: an answered round's state must continue nothing")
	}
	if r := asks.InputRequests[firstKey(asks)]; r.Method != mcp.MethodListRoots {
		t.Fatalf("round 2 asks %s, want roots/list", r.Method)
	}
	out, asks, err := b.run(ctx, ann, "tools/call x", answers(t, asks, map[string]string{"roots/list": `{"roots":[{"uri":"file:///a"}]}`}), nil, asking)
	if err != nil || asks != nil || string(out.(json.RawMessage)) != `{"action":"accept","content":{"name":"Ada"},"roots":1}` {
		t.Fatalf("outcome: %s %+v %v", out, asks, err)
	}
	if _, _, err := b.run(ctx, ann, "tools/call x", mcp.MultiRoundTripParams{RequestState: state}, nil, asking); !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("the state of an ended call: %v", err)
	}

	// A client that declared neither: the question is declined for it, and the roots it
	// cannot give end the call with -32021, naming them.
	_, _, err = b.run(modernCtx(mcp.ClientCapabilities{}), ann, "tools/call x", mcp.MultiRoundTripParams{}, nil, asking)
	var missing mcp.MissingRequiredClientCapabilityError
	if !errors.As(err, &missing) || missing.Capability != "roots" {
		t.Errorf("a client without roots: %v, want -32021 for roots", err)
	}

	// A client that gives up ends the call; none is left behind.
	cctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		b.run(cctx, ann, "tools/call x", mcp.MultiRoundTripParams{}, nil, func(ctx context.Context) (any, error) {
			<-ctx.Done()
			close(ended)
			return nil, ctx.Err()
		})
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the call went on after its client gave up")
	}
	b.close()
	b.close()
	if b.mu.Lock(); len(b.calls) != 0 {
		t.Errorf("%d calls left after close", len(b.calls))
	}
	b.mu.Unlock()
}

func firstKey(r *mcp.MultiRoundTripResult) string {
	for k := range r.InputRequests {
		return k
	}
	return ""
}

// TestBridgeStateServesOneRequest: a requestState is good for one request at a time (a
// replay while its round runs is refused, and cannot end the call the first waits for); a
// retry with one bad answer among good ones hands over none; a caller has maxCalls calls
// running at most.
func TestBridgeStateServesOneRequest(t *testing.T) {
	ann := identity.User{Kind: identity.Person, Key: "ann"}
	b := newBridge(time.Minute, 2, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(b.close)
	ctx := modernCtx(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}, Sampling: &mcp.SamplingCapability{}})
	release := make(chan struct{})
	// Asks for a name and a sample at once, then waits for release before it answers.
	twoThenWait := func(ctx context.Context) (any, error) {
		rt := roundTripOf(ctx)
		var name *mcp.ElicitationResult
		var sample *mcp.CreateMessageResult
		var err1, err2 error
		var wg sync.WaitGroup
		wg.Go(func() {
			name, err1 = rt.elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "name?"}})
		})
		wg.Go(func() { sample, err2 = rt.sample(ctx, mcp.CreateMessageRequest{}) })
		wg.Wait()
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		out, _ := json.Marshal(map[string]any{"name": name.Content, "sample": sample.Model})
		return json.RawMessage(out), nil
	}
	_, asks, err := b.run(ctx, ann, "tools/call x", mcp.MultiRoundTripParams{}, nil, twoThenWait)
	if err != nil || asks == nil || len(asks.InputRequests) != 2 {
		t.Fatalf("round 1: %v %+v, want both questions in one round", err, asks)
	}
	good := map[string]string{"elicitation/create": `{"action":"accept","content":{"name":"Ada"}}`, "sampling/createMessage": `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m1"}`}
	bad := map[string]string{"elicitation/create": good["elicitation/create"], "sampling/createMessage": `[1,2]`}
	if _, _, err := b.run(ctx, ann, "tools/call x", answers(t, asks, bad), nil, twoThenWait); !errors.Is(err, mcp.ErrInvalidParams) {
		t.Fatalf("one bad answer among good ones: %v", err)
	}
	// Nothing was handed over: the same state still asks both.
	_, again, err := b.run(ctx, ann, "tools/call x", mcp.MultiRoundTripParams{RequestState: asks.RequestState}, nil, twoThenWait)
	if err != nil || again == nil || len(again.InputRequests) != 2 {
		t.Fatalf("after a refused retry: %v %+v, want both questions still asked", err, again)
	}
	first := make(chan error, 1)
	go func() {
		out, _, err := b.run(ctx, ann, "tools/call x", answers(t, asks, good), nil, twoThenWait)
		if err == nil && !strings.Contains(string(out.(json.RawMessage)), `"sample":"m1"`) {
			err = fmt.Errorf("outcome %s", out)
		}
		first <- err
	}()
	// The first retry has taken the state and waits for the call.
	eventuallyTrue(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		_, free := b.calls[asks.RequestState]
		return !free
	})
	rctx, giveUp := context.WithTimeout(ctx, 2*time.Second)
	if _, _, err := b.run(rctx, ann, "tools/call x", answers(t, asks, good), nil, twoThenWait); !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("a replay while its round runs: %v, want it refused", err)
	}
	giveUp()
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the first retry: %v", err)
	}

	// maxCalls: two calls running, the third refused; another caller is not counted. (The
	// call above is gone once its goroutine has seen it end.)
	eventuallyTrue(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.live) == 0 })
	block := make(chan struct{})
	waits := func(ctx context.Context) (any, error) {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return json.RawMessage(`{}`), nil
	}
	var running sync.WaitGroup
	for range 2 {
		running.Go(func() { b.run(ctx, ann, "tools/call y", mcp.MultiRoundTripParams{}, nil, waits) })
	}
	eventuallyTrue(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.live) == 2 })
	if _, _, err := b.run(ctx, ann, "tools/call y", mcp.MultiRoundTripParams{}, nil, waits); !errors.Is(err, errBusy) {
		t.Errorf("a third call: %v, want errBusy", err)
	}
	bob := identity.User{Kind: identity.Person, Key: "bob"}
	if out, _, err := b.run(ctx, bob, "tools/call y", mcp.MultiRoundTripParams{}, nil, func(context.Context) (any, error) { return json.RawMessage(`{}`), nil }); err != nil || out == nil {
		t.Errorf("another caller: %v", err)
	}
	close(block)
	running.Wait()
}

func eventuallyTrue(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("timed out")
}

// TestBridgeProgressGoesToTheWaitingRequest: each round is a request of its own, so a call's
// progress goes to the request waiting for it now, never to one that has ended.
func TestBridgeProgressGoesToTheWaitingRequest(t *testing.T) {
	ann := identity.User{Kind: identity.Person, Key: "ann"}
	b := newBridge(time.Minute, 32, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(b.close)
	ctx := modernCtx(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}})
	confirmThenWork := func(ctx context.Context) (any, error) {
		rt := roundTripOf(ctx)
		rt.progress(json.RawMessage(`{"progress":0}`))
		if _, err := rt.elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "go?"}}); err != nil {
			return nil, err
		}
		for i := 1; i <= 3; i++ {
			rt.progress(json.RawMessage(fmt.Sprintf(`{"progress":%d}`, i)))
		}
		return json.RawMessage(`{}`), nil
	}
	var mu sync.Mutex
	got := map[string][]string{}
	to := func(round string) func(json.RawMessage) {
		return func(p json.RawMessage) { mu.Lock(); got[round] = append(got[round], string(p)); mu.Unlock() }
	}
	_, asks, err := b.run(ctx, ann, "tools/call x", mcp.MultiRoundTripParams{}, to("first"), confirmThenWork)
	if err != nil || asks == nil {
		t.Fatalf("round 1: %v %+v", err, asks)
	}
	if _, _, err := b.run(ctx, ann, "tools/call x", answers(t, asks, map[string]string{"elicitation/create": `{"action":"accept"}`}), to("second"), confirmThenWork); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{`{"progress":0}`}; !slices.Equal(got["first"], want) {
		t.Errorf("the first request got %v, want %v", got["first"], want)
	}
	if want := []string{`{"progress":1}`, `{"progress":2}`, `{"progress":3}`}; !slices.Equal(got["second"], want) {
		t.Errorf("the second request got %v, want %v", got["second"], want)
	}
}
