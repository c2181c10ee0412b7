package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/gate"
	"github.com/toolsift/toolsift/internal/mcptest"
	"github.com/toolsift/toolsift/upstream"
)

// echoUpstream serves n echo tools (tool_000…) over streamable HTTP, as a real upstream.
func echoUpstream(t testing.TB, n int) string {
	s := server.NewMCPServer("echo", "1", server.WithToolCapabilities(true))
	for i := range n {
		s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%03d", i), mcp.WithDescription("Echo tool.")),
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(req.Params.Name + " " + string(req.Params.RawArguments)), nil
			})
	}
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s, server.WithStateful(true)))
	t.Cleanup(hs.Close)
	return hs.URL
}

// proxyOver serves a proxy over HTTP in front of an upstream URL and returns its /mcp URL.
func proxyOver(t testing.TB, upstreamURL string) (string, *Server) {
	pool := upstream.NewPool([]config.Server{{Name: "up", Prefix: "up", Type: config.TypeHTTP, URL: upstreamURL + "/mcp"}}, upstream.Options{})
	pool.Start(upstream.Hooks{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if pending := pool.WaitStarted(ctx); len(pending) > 0 {
		t.Fatalf("upstream did not start")
	}
	p := New(pool, Options{ListWait: 50 * time.Millisecond})
	h, shutdown := gate.Handler(p, gate.Options{})
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		shutdown(context.Background())
		pool.Close()
	})
	return hs.URL + "/mcp", p
}

func callTool(c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	return c.CallTool(context.Background(), req)
}

// TestLoadAndIsolation runs 200 sessions at once, each unlocking its own tool and calling it
// 20 times. Every response must arrive, no session may list another's unlock, and once all
// sessions end, goroutines return to where they were.
func TestLoadAndIsolation(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const sessions, calls = 200, 20
	url, p := proxyOver(t, echoUpstream(t, sessions))
	runtime.GC()
	before := runtime.NumGoroutine()

	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := range sessions {
		wg.Go(func() {
			c := dialHTTP(t, url, false)
			defer c.Close()
			mine := fmt.Sprintf("up__tool_%03d", i)
			for j := range calls {
				res, err := callTool(c, "call_tool", map[string]any{"name": mine, "arguments": map[string]any{"n": j}})
				if err != nil || res.IsError || !strings.Contains(mcptest.Text(res), fmt.Sprintf(`{"n":%d}`, j)) {
					errs <- fmt.Errorf("session %d call %d: %v %v", i, j, err, res)
					return
				}
			}
			list, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				errs <- err
				return
			}
			var names []string
			for _, tl := range list.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, []string{SearchTool, CallTool, mine}) {
				errs <- fmt.Errorf("session %d lists %q", i, names)
			}
			// End the session as a client would, so that its state is freed.
			if tr, ok := c.GetTransport().(*transport.StreamableHTTP); ok {
				tr.Close()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Pooled keep-alive connections are the HTTP client's, not a leak of the proxy.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		runtime.GC()
		left := p.sessionCount()
		after := runtime.NumGoroutine()
		if left == 0 && after <= before+5 {
			break
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after all sessions ended: %d sessions tracked, goroutines %d → %d\n%s", left, before, after, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// BenchmarkCallThroughProxy compares calls per second through the proxy with calls made
// straight to the same upstream.
func BenchmarkCallThroughProxy(b *testing.B) {
	up := echoUpstream(b, 1)
	url, _ := proxyOver(b, up)
	for _, target := range []struct{ name, url, tool string }{
		{"direct", up + "/mcp", "tool_000"},
		{"proxy", url, "up__tool_000"},
	} {
		b.Run(target.name, func(b *testing.B) {
			c := dialHTTP(b, target.url, false)
			defer c.Close()
			for b.Loop() {
				if res, err := callTool(c, target.tool, map[string]any{"x": 1}); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// BenchmarkIdleSessionMemory reports the heap one idle session costs: initialised, one tool
// unlocked, then left alone.
func BenchmarkIdleSessionMemory(b *testing.B) {
	url, _ := proxyOver(b, echoUpstream(b, 1))
	const n = 100
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var clients []*client.Client
		for range n {
			c := dialHTTP(b, url, false)
			if _, err := callTool(c, "call_tool", map[string]any{"name": "up__tool_000"}); err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/session")
		for _, c := range clients {
			c.Close()
		}
	}
}
