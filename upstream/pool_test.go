package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/mcptest"
)

// fakeConn is an in-memory server. The same one is returned by every dial in most tests,
// so Close ends the current connection's Lost channel and the next dial gets a new one.
type fakeConn struct {
	mu     sync.Mutex
	tools  []json.RawMessage
	closed bool
	lost   chan struct{}
	call   func(params json.RawMessage) (json.RawMessage, error)
	onList func() // if set, called on each tools/list
}

func (f *fakeConn) Lost() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost == nil {
		f.lost = make(chan struct{})
	}
	return f.lost
}

func (f *fakeConn) Err() error { return nil }

func (f *fakeConn) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	switch method {
	case "tools/list":
		if f.onList != nil {
			f.onList()
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return json.Marshal(map[string]any{"tools": slices.Clone(f.tools)})
	case "tools/call":
		raw := params.(json.RawMessage)
		if f.call != nil {
			return f.call(raw)
		}
		return raw, nil
	}
	return nil, &RPCError{Code: -32601, Message: "method not found"}
}

func (f *fakeConn) Close() error {
	f.mu.Lock()
	f.closed = true
	if f.lost != nil {
		close(f.lost)
		f.lost = nil
	}
	f.mu.Unlock()
	return nil
}

func rawTool(name string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, name))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPoolRetriesAndRelists(t *testing.T) {
	conn := &fakeConn{tools: []json.RawMessage{rawTool("a"), rawTool("secret"), rawTool("b")}}
	var attempts atomic.Int32
	var notify atomic.Value
	var changes atomic.Int32
	pool := NewPool([]config.Server{
		{Name: "s", Prefix: "s", Deny: []string{"secret"}, AlwaysLoad: []string{"b"}},
		{Name: "off", Prefix: "off", Disabled: true},
	}, Options{
		RetryMin: time.Millisecond, RetryMax: 2 * time.Millisecond,
		Dial: func(_ context.Context, srv config.Server, stderr *Tail, n Notify, _ Peer) (Conn, Info, error) {
			if attempts.Add(1) < 3 {
				fmt.Fprintf(stderr, "attempt failed\n")
				return nil, Info{}, errors.New("not yet")
			}
			notify.Store(n)
			return conn, Info{Summary: "fake"}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{OnChange: func() { changes.Add(1) }})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if pending := pool.WaitStarted(ctx); len(pending) != 0 {
		t.Fatalf("pending = %v", pending)
	}
	waitFor(t, "connection after retries", func() bool { return len(pool.Catalog().Tools) == 2 })
	cat := pool.Catalog()
	if got := []string{cat.Tools[0].Exposed, cat.Tools[1].Exposed}; !slices.Equal(got, []string{"s__a", "s__b"}) {
		t.Errorf("catalog = %q, want s__a s__b (secret denied)", got)
	}
	if cat.Tools[0].AlwaysLoad || !cat.Tools[1].AlwaysLoad {
		t.Errorf("alwaysLoad not applied: %+v", cat.Tools)
	}
	if srv, denied := pool.Denied("s__secret"); !denied || srv != "s" {
		t.Errorf("Denied(s__secret) = %q, %v", srv, denied)
	}
	if _, denied := pool.Denied("s__a"); denied {
		t.Error("Denied(s__a) = true")
	}
	st := pool.Statuses()
	if st[0].State != StateConnected || st[0].Summary != "fake" || st[1].State != StateDisabled {
		t.Errorf("statuses = %+v", st)
	}

	// The server announces new tools: the pool re-lists.
	conn.mu.Lock()
	conn.tools = append(conn.tools, rawTool("c"))
	conn.mu.Unlock()
	before := changes.Load()
	notify.Load().(Notify)("notifications/tools/list_changed", nil)
	waitFor(t, "re-list", func() bool { _, ok := pool.Catalog().Lookup("s__c"); return ok })
	if changes.Load() <= before {
		t.Error("OnChange not called after re-list")
	}

	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	conn.mu.Lock()
	defer conn.mu.Unlock()
	if !conn.closed {
		t.Error("connection not closed by Close")
	}
}

func TestPoolCall(t *testing.T) {
	var notify atomic.Value
	conn := &fakeConn{tools: []json.RawMessage{rawTool("echo"), rawTool("lost")}}
	conn.call = func(params json.RawMessage) (json.RawMessage, error) {
		var p struct {
			Name string
			Meta struct {
				Token string `json:"progressToken"`
			} `json:"_meta"`
		}
		json.Unmarshal(params, &p)
		if p.Name == "lost" {
			return nil, ErrClosed
		}
		if p.Meta.Token != "" {
			notify.Load().(Notify)("notifications/progress", json.RawMessage(`{"progressToken":"`+p.Meta.Token+`","progress":1}`))
		}
		return params, nil
	}
	var dials atomic.Int32
	pool := NewPool([]config.Server{{Name: "s", Prefix: "p"}}, Options{
		RetryMin: time.Millisecond,
		Dial: func(_ context.Context, _ config.Server, _ *Tail, n Notify, _ Peer) (Conn, Info, error) {
			dials.Add(1)
			notify.Store(n)
			return conn, Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 2 })

	var got []string
	res, err := pool.Call(context.Background(), "p__echo", json.RawMessage(`{"big":12345678901234567890}`), 7.0, func(p json.RawMessage) {
		got = append(got, string(p))
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"arguments":{"big":12345678901234567890}`) || !strings.Contains(string(res), `"name":"echo"`) {
		t.Errorf("sent params = %s", res)
	}
	if len(got) != 1 || !strings.Contains(got[0], `"progressToken":7`) {
		t.Errorf("progress = %q, want the caller's token 7 restored", got)
	}
	if _, err := pool.Call(context.Background(), "p__nope", nil, nil, nil); err == nil {
		t.Error("call of unknown tool: no error")
	}
	// A lost connection is an error naming the server, and triggers a reconnect.
	_, err = pool.Call(context.Background(), "p__lost", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `upstream "s"`) {
		t.Errorf("lost call error = %v", err)
	}
	waitFor(t, "reconnect", func() bool { return dials.Load() >= 2 })
}

func TestPoolCallTimeout(t *testing.T) {
	conn := &fakeConn{tools: []json.RawMessage{rawTool("hang")}}
	pool := NewPool([]config.Server{{Name: "s", Prefix: "s", CallTimeout: 20 * time.Millisecond}}, Options{
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			return &timeoutConn{fakeConn: conn}, Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 1 })
	_, err := pool.Call(context.Background(), "s__hang", nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), `upstream "s": calling hang: no answer within 20ms`) {
		t.Errorf("hung call error = %v", err)
	}
}

// timeoutConn honours the call's context, as the real transports do.
type timeoutConn struct{ *fakeConn }

func (c *timeoutConn) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if method != "tools/call" {
		return c.fakeConn.Request(ctx, method, params)
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// scriptConn is one connection to a scripted server: answer decides each request, and
// loseNow ends the connection as a crash would.
type scriptConn struct {
	answer func(ctx context.Context, method string, params any) (json.RawMessage, error)
	lost   chan struct{}
	once   sync.Once
	calls  atomic.Int32
}

func newScriptConn(answer func(ctx context.Context, method string, params any) (json.RawMessage, error)) *scriptConn {
	return &scriptConn{answer: answer, lost: make(chan struct{})}
}

func (c *scriptConn) Request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if method == "tools/list" {
		return json.RawMessage(`{"tools":[{"name":"t"}]}`), nil
	}
	if method == "tools/call" {
		c.calls.Add(1)
	}
	return c.answer(ctx, method, params)
}
func (c *scriptConn) loseNow()              { c.once.Do(func() { close(c.lost) }) }
func (c *scriptConn) Close() error          { c.loseNow(); return nil }
func (c *scriptConn) Lost() <-chan struct{} { return c.lost }
func (c *scriptConn) Err() error            { return errors.New("scripted loss") }

func echoAnswer(_ context.Context, _ string, params any) (json.RawMessage, error) {
	return json.RawMessage(`{"content":[]}`), nil
}

// scriptedPool starts a pool of one server, s, whose n-th dial (from 1) is answered by
// dial(n).
func scriptedPool(t *testing.T, opts Options, dial func(n int) (Conn, error)) *Pool {
	t.Helper()
	return scriptedServerPool(t, config.Server{Name: "s", Prefix: "s"}, opts, dial)
}

// scriptedServerPool is scriptedPool with the server configured as srv.
func scriptedServerPool(t *testing.T, srv config.Server, opts Options, dial func(n int) (Conn, error)) *Pool {
	t.Helper()
	var dials atomic.Int32
	opts.Dial = func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
		c, err := dial(int(dials.Add(1)))
		return c, Info{}, err
	}
	pool := NewPool([]config.Server{srv}, opts)
	t.Cleanup(func() { pool.Close() })
	pool.Start(Hooks{})
	return pool
}

// TestCallWaitsForRestart: a call made while the server is down waits for the restart under
// way and then goes through.
func TestCallWaitsForRestart(t *testing.T) {
	first := newScriptConn(echoAnswer)
	restarting := make(chan struct{})
	pool := scriptedPool(t, Options{RetryMin: time.Millisecond}, func(n int) (Conn, error) {
		if n == 1 {
			return first, nil
		}
		<-restarting
		return newScriptConn(echoAnswer), nil
	})
	waitFor(t, "connection", func() bool { return pool.Statuses()[0].State == StateConnected })
	first.loseNow()
	waitFor(t, "the crash to be noticed", func() bool { return pool.Statuses()[0].State == StateFailed })
	time.AfterFunc(50*time.Millisecond, func() { close(restarting) })
	if _, err := pool.Call(context.Background(), "s__t", nil, nil, nil); err != nil {
		t.Fatalf("call while the server restarted: %v", err)
	}
}

// TestCallOnDeadServerFailsAtOnce: a server that cannot start does not hold a call for the
// whole callTimeout; the call triggers an attempt and fails with that attempt's error.
func TestCallOnDeadServerFailsAtOnce(t *testing.T) {
	pool := scriptedPool(t, Options{RetryMin: 10 * time.Millisecond, RetryMax: time.Hour, CallTimeout: time.Hour},
		func(n int) (Conn, error) { return nil, fmt.Errorf("boom %d", n) })
	waitFor(t, "the first failure", func() bool { return pool.Statuses()[0].Err != nil })
	// The catalog is empty, so call through Request, as prompts and resources do.
	_, err := pool.Request(context.Background(), "s", "prompts/get", nil)
	if err == nil || !strings.Contains(err.Error(), `upstream "s"`) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error = %v, want the server named and its attempt's error", err)
	}
	if strings.Contains(err.Error(), "boom 1") {
		t.Errorf("error = %v: the call did not wait for a fresh attempt", err)
	}
}

// TestSessionLostIsSentAgain: an HTTP server that forgot the session (404) never acted on
// the request, so it is sent again, once, on a new session.
func TestSessionLostIsSentAgain(t *testing.T) {
	var conns []*scriptConn
	var mu sync.Mutex
	pool := scriptedPool(t, Options{RetryMin: time.Millisecond}, func(n int) (Conn, error) {
		c := newScriptConn(echoAnswer)
		if n == 1 {
			c.answer = func(context.Context, string, any) (json.RawMessage, error) {
				c.loseNow()
				return nil, fmt.Errorf("tools/call: %w", ErrSessionLost)
			}
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return c, nil
	})
	waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 1 })
	if _, err := pool.Call(context.Background(), "s__t", nil, nil, nil); err != nil {
		t.Fatalf("call across a lost session: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(conns) != 2 || conns[0].calls.Load() != 1 || conns[1].calls.Load() != 1 {
		t.Errorf("%d connections; want the call sent once on each of 2", len(conns))
	}
}

// TestUnansweringServerIsRestarted: after a call times out, a server that does not answer a
// ping is restarted; one that answers, even with an error, is left alone.
func TestUnansweringServerIsRestarted(t *testing.T) {
	for _, tt := range []struct {
		name        string
		ping        func(ctx context.Context) (json.RawMessage, error)
		wantRestart bool
	}{
		{"hung", func(ctx context.Context) (json.RawMessage, error) { <-ctx.Done(); return nil, ctx.Err() }, true},
		{"answers ping", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{}`), nil }, false},
		{"ping unknown", func(context.Context) (json.RawMessage, error) { return nil, &RPCError{Code: -32601} }, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var dials atomic.Int32
			var logs mcptest.Buffer
			pool := scriptedPool(t, Options{RetryMin: time.Millisecond, PingTimeout: 20 * time.Millisecond, CallTimeout: 20 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))},
				func(int) (Conn, error) {
					dials.Add(1)
					return newScriptConn(func(ctx context.Context, method string, _ any) (json.RawMessage, error) {
						if method == "ping" {
							return tt.ping(ctx)
						}
						<-ctx.Done()
						return nil, ctx.Err()
					}), nil
				})
			waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 1 })
			_, err := pool.Call(context.Background(), "s__t", nil, nil, nil)
			if err == nil || !strings.Contains(err.Error(), "no answer within 20ms (callTimeout)") {
				t.Fatalf("error = %v", err)
			}
			if tt.wantRestart {
				waitFor(t, "restart", func() bool { return dials.Load() == 2 })
				if !strings.Contains(logs.String(), "stopped answering") {
					t.Errorf("log does not say why the server was restarted:\n%s", logs.String())
				}
				return
			}
			time.Sleep(100 * time.Millisecond) // a restart would come within a few ms
			if n := dials.Load(); n != 1 {
				t.Errorf("%d dials: a server that answers ping was restarted", n)
			}
		})
	}
}

// TestStartsAreBounded: no more than MaxStarting stdio servers start at once, and all of
// them start.
func TestStartsAreBounded(t *testing.T) {
	var inFlight, most atomic.Int32
	var servers []config.Server
	for i := range 12 {
		servers = append(servers, config.Server{Name: fmt.Sprint("s", i), Prefix: fmt.Sprint("s", i), Type: config.TypeStdio})
	}
	pool := NewPool(servers, Options{
		MaxStarting: 3,
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			n := inFlight.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
			inFlight.Add(-1)
			return newScriptConn(echoAnswer), Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "every server", func() bool { return len(pool.Catalog().Tools) == 12 })
	if m := most.Load(); m > 3 || m < 2 {
		t.Errorf("%d servers started at once, want at most 3 (and more than 1)", m)
	}
}

// TestCachedServerStartsLaterUnlessCalled: a server whose catalog is cached is started
// after CachedStartDelay, or at once when a call needs it.
func TestCachedServerStartsLaterUnlessCalled(t *testing.T) {
	cache := t.TempDir()
	srv := config.Server{Name: "s", Prefix: "s"}
	if err := saveCache(cache, srv, &cacheEntry{Server: "s", Saved: time.Now(), Tools: []json.RawMessage{rawTool("t")}}); err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int32
	pool := NewPool([]config.Server{srv}, Options{
		CacheDir: cache, CachedStartDelay: time.Hour,
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			dials.Add(1)
			return newScriptConn(echoAnswer), Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	time.Sleep(20 * time.Millisecond)
	if n := dials.Load(); n != 0 {
		t.Fatalf("%d dials before the delay or a call", n)
	}
	if _, err := pool.Call(context.Background(), "s__t", nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials after a call, want 1", n)
	}
}

// TestSubscriptionsAreRenewed: a server that restarts is subscribed again to what clients
// hold, and not to what they gave up.
func TestSubscriptionsAreRenewed(t *testing.T) {
	var mu sync.Mutex
	var conns []*scriptConn
	subscribed := map[int][]string{} // by connection number
	pool := scriptedPool(t, Options{RetryMin: time.Millisecond}, func(n int) (Conn, error) {
		c := newScriptConn(func(_ context.Context, method string, params any) (json.RawMessage, error) {
			if method == "resources/subscribe" {
				mu.Lock()
				subscribed[n] = append(subscribed[n], params.(map[string]string)["uri"])
				mu.Unlock()
			}
			return json.RawMessage(`{}`), nil
		})
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		return c, nil
	})
	waitFor(t, "connection", func() bool { return pool.Statuses()[0].State == StateConnected })
	ctx := context.Background()
	for _, r := range []struct{ method, uri string }{
		{"resources/subscribe", "file:///a"}, {"resources/subscribe", "file:///b"}, {"resources/unsubscribe", "file:///a"},
	} {
		if _, err := pool.Request(ctx, "s", r.method, map[string]string{"uri": r.uri}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	conns[0].loseNow()
	mu.Unlock()
	waitFor(t, "reconnection", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(conns) == 2 && pool.Statuses()[0].State == StateConnected
	})
	mu.Lock()
	defer mu.Unlock()
	if got := subscribed[2]; !slices.Equal(got, []string{"file:///b"}) {
		t.Errorf("renewed subscriptions = %q, want [file:///b]", got)
	}
}

// TestIdleStopWaitsForCallsAndSubscriptions: a server is not stopped as idle while a call
// to it is in flight or while it holds a resource subscription, and is once neither holds.
func TestIdleStopWaitsForCallsAndSubscriptions(t *testing.T) {
	release := make(chan struct{})
	srv := config.Server{Name: "s", Prefix: "s", Type: config.TypeStdio, IdleTimeout: 30 * time.Millisecond}
	pool := scriptedServerPool(t, srv, Options{}, func(int) (Conn, error) {
		return newScriptConn(func(_ context.Context, method string, _ any) (json.RawMessage, error) {
			if method == "tools/call" {
				<-release
			}
			return json.RawMessage(`{}`), nil
		}), nil
	})
	state := func() State { return pool.Statuses()[0].State }
	waitFor(t, "connection", func() bool { return state() == StateConnected })
	called := make(chan error, 1)
	go func() {
		_, err := pool.Call(context.Background(), "s__t", nil, nil, nil)
		called <- err
	}()
	time.Sleep(150 * time.Millisecond) // five idle timeouts
	if st := state(); st != StateConnected {
		t.Fatalf("state with a call in flight = %s, want connected", st)
	}
	close(release)
	if err := <-called; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "idle stop after the call", func() bool { return state() == StateIdle })

	ctx := context.Background()
	if _, err := pool.Request(ctx, "s", "resources/subscribe", map[string]string{"uri": "file:///a"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if st := state(); st != StateConnected {
		t.Fatalf("state with a subscription = %s, want connected", st)
	}
	if _, err := pool.Request(ctx, "s", "resources/unsubscribe", map[string]string{"uri": "file:///a"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "idle stop after the unsubscription", func() bool { return state() == StateIdle })
}

// TestHTTPStartsAreNotHeldBack: the start limit is for processes; HTTP servers connect
// together even when it is 1. Each dial here waits until all three are dialling.
func TestHTTPStartsAreNotHeldBack(t *testing.T) {
	var dialling sync.WaitGroup
	dialling.Add(3)
	together := make(chan struct{})
	go func() { dialling.Wait(); close(together) }()
	var servers []config.Server
	for i := range 3 {
		servers = append(servers, config.Server{Name: fmt.Sprint("h", i), Prefix: fmt.Sprint("h", i), Type: config.TypeHTTP, URL: "http://h/mcp"})
	}
	pool := NewPool(servers, Options{
		MaxStarting: 1, RetryMin: time.Hour,
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			dialling.Done()
			select {
			case <-together:
				return newScriptConn(echoAnswer), Info{}, nil
			case <-time.After(2 * time.Second):
				return nil, Info{}, errors.New("the other HTTP servers were not dialling")
			}
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "every HTTP server", func() bool { return len(pool.Catalog().Tools) == 3 })
}

// TestCallsDoNotMakeACrashLoopBusy: calls to a server that keeps failing each ask for an
// attempt at once, but attempts never come closer than the back-off floor
// (RetryMin/2 here).
func TestCallsDoNotMakeACrashLoopBusy(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	pool := scriptedPool(t, Options{RetryMin: 50 * time.Millisecond, RetryMax: time.Hour, CallTimeout: time.Hour},
		func(n int) (Conn, error) {
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
			return nil, fmt.Errorf("boom %d", n)
		})
	waitFor(t, "the first failure", func() bool { return pool.Statuses()[0].Err != nil })
	for range 5 {
		if _, err := pool.Request(context.Background(), "s", "ping", nil); err == nil {
			t.Fatal("a request to a failing server succeeded")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(times) < 6 {
		t.Fatalf("%d attempts for 5 requests after the first failure, want one each", len(times))
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 25*time.Millisecond {
			t.Errorf("attempt %d came %v after the one before, under the 25ms floor", i+1, gap)
		}
	}
}

// TestCatalogHasEveryServerAfterConcurrentConnects: servers that connect at the same moment
// each rebuild the catalog; an older build must never replace a newer one, or a tool of a
// connected server goes missing from search until the next change.
func TestCatalogHasEveryServerAfterConcurrentConnects(t *testing.T) {
	for range 20 {
		var servers []config.Server
		for i := range 8 {
			name := fmt.Sprintf("s%d", i)
			servers = append(servers, config.Server{Name: name, Prefix: name})
		}
		release := make(chan struct{})
		pool := NewPool(servers, Options{
			Dial: func(ctx context.Context, srv config.Server, _ *Tail, _ Notify, _ Peer) (Conn, Info, error) {
				<-release // connect together
				return &fakeConn{tools: []json.RawMessage{rawTool("t")}}, Info{}, nil
			},
		})
		pool.Start(Hooks{})
		close(release)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pending := pool.WaitStarted(ctx)
		cancel()
		got := len(pool.Catalog().Tools)
		pool.Close()
		if len(pending) > 0 || got != len(servers) {
			t.Fatalf("after every server connected: %d tools in the catalog, want %d (pending %v)", got, len(servers), pending)
		}
	}
}

// TestRelistFloodIsRateLimited: a server announcing list changes without end is re-listed
// at most once per RelistInterval, and its last change is still picked up.
func TestRelistFloodIsRateLimited(t *testing.T) {
	var lists atomic.Int32
	conn := &fakeConn{tools: []json.RawMessage{rawTool("a")}, onList: func() { lists.Add(1) }}
	var notify atomic.Value
	pool := NewPool([]config.Server{{Name: "s", Prefix: "s"}}, Options{
		RelistInterval: 100 * time.Millisecond,
		Dial: func(_ context.Context, _ config.Server, _ *Tail, n Notify, _ Peer) (Conn, Info, error) {
			notify.Store(n)
			return conn, Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start(Hooks{})
	waitFor(t, "connection", func() bool { return len(pool.Catalog().Tools) == 1 })
	start, before := time.Now(), lists.Load()
	for time.Since(start) < time.Second {
		notify.Load().(Notify)("notifications/tools/list_changed", nil)
		time.Sleep(100 * time.Microsecond)
	}
	conn.mu.Lock()
	conn.tools = append(conn.tools, rawTool("b"))
	conn.mu.Unlock()
	notify.Load().(Notify)("notifications/tools/list_changed", nil)
	waitFor(t, "the last change", func() bool { return len(pool.Catalog().Tools) == 2 })
	// One second of announcements at 100ms apart: about 10 listings, not thousands.
	if n := lists.Load() - before; n > 14 {
		t.Errorf("%d listings for a second of list_changed flood, want at most 14", n)
	}
}
