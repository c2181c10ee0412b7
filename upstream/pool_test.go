package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
)

// fakeConn is an in-memory server. The same one is returned by every dial in most tests,
// so Close ends the current connection's Lost channel and the next dial gets a new one.
type fakeConn struct {
	mu     sync.Mutex
	tools  []json.RawMessage
	closed bool
	lost   chan struct{}
	call   func(params json.RawMessage) (json.RawMessage, error)
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
		OnChange: func() { changes.Add(1) },
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
	pool.Start()
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
	pool.Start()
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

func TestCatalogCollisions(t *testing.T) {
	cat := NewCatalog([]Tool{
		{Server: "a", Name: "x", Exposed: "x"},
		{Server: "b", Name: "x", Exposed: "x"},
	})
	if len(cat.Tools) != 2 || cat.Tools[0].Exposed != "x" || cat.Tools[1].Exposed == "x" {
		t.Fatalf("collision not resolved: %+v", cat.Tools)
	}
	if !apiName.MatchString(cat.Tools[1].Exposed) {
		t.Errorf("renamed tool %q is not a legal name", cat.Tools[1].Exposed)
	}
	if again := NewCatalog([]Tool{{Server: "a", Name: "x", Exposed: "x"}, {Server: "b", Name: "x", Exposed: "x"}}); again.Tools[1].Exposed != cat.Tools[1].Exposed {
		t.Error("collision renaming is not deterministic")
	}
}

func TestParseTool(t *testing.T) {
	tests := []struct {
		raw        string
		wantErr    bool
		alwaysLoad bool
	}{
		{`{"name":"a","inputSchema":{"type":"object"}}`, false, false},
		{`{"name":"a","_meta":{"anthropic/alwaysLoad":true}}`, false, true},
		{`{"name":"a","_meta":{"anthropic/alwaysLoad":"yes"}}`, false, false},
		{`{"name":""}`, true, false},
		{`[]`, true, false},
	}
	for _, tt := range tests {
		got, err := ParseTool(json.RawMessage(tt.raw))
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseTool(%s) error = %v", tt.raw, err)
			continue
		}
		if got.AlwaysLoad != tt.alwaysLoad {
			t.Errorf("ParseTool(%s).AlwaysLoad = %v", tt.raw, got.AlwaysLoad)
		}
	}
}

func TestTail(t *testing.T) {
	tail := NewTail(16)
	fmt.Fprint(tail, "first line\nsecond line\nthird\n")
	if got := tail.String(); got != "third" {
		t.Errorf("Tail = %q, want %q", got, "third")
	}
	tail.Reset()
	if got := tail.String(); got != "" {
		t.Errorf("after Reset, Tail = %q", got)
	}
}

func TestPoolCallTimeout(t *testing.T) {
	conn := &fakeConn{tools: []json.RawMessage{rawTool("hang")}}
	pool := NewPool([]config.Server{{Name: "s", Prefix: "s", CallTimeout: 20 * time.Millisecond}}, Options{
		Dial: func(context.Context, config.Server, *Tail, Notify, Peer) (Conn, Info, error) {
			return &timeoutConn{fakeConn: conn}, Info{}, nil
		},
	})
	defer pool.Close()
	pool.Start()
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
