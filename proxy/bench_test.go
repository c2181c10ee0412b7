package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/upstream"
)

// The benchmarks here run the proxy in process, over the public catalogs of bench/catalogs
// (1,142 tools of 41 servers) repeated under renamed servers for larger sizes. A request
// goes through mcp-go's HandleMessage and is encoded as a transport would encode it, so
// each op costs what one request costs toolsift.

var (
	baseToolsOnce sync.Once
	baseTools     []upstream.Tool
	baseErr       error
)

// benchTools returns n tools: the public catalogs, repeated under renamed servers.
func benchTools(tb testing.TB, n int) []upstream.Tool {
	tb.Helper()
	baseToolsOnce.Do(func() {
		files, _ := filepath.Glob("../bench/catalogs/*.json")
		for _, f := range files {
			if strings.HasSuffix(f, "azure-all.json") {
				continue // an alternative view of azure
			}
			tools, err := upstream.LoadTools(f)
			if err != nil {
				baseErr = err
				return
			}
			baseTools = append(baseTools, tools...)
		}
	})
	if baseErr != nil || len(baseTools) == 0 {
		tb.Fatalf("loading ../bench/catalogs: %v", baseErr)
	}
	var tools []upstream.Tool
	for copy := 0; len(tools) < n; copy++ {
		for _, t := range baseTools {
			if len(tools) == n {
				break
			}
			if copy > 0 {
				t.Server = fmt.Sprintf("%s%d", t.Server, copy)
				t.Exposed = upstream.ExposedName(t.Server, t.Name)
			}
			tools = append(tools, t)
		}
	}
	return tools
}

// benchUpstreams is an Upstreams whose catalog the benchmark sets; calls answer at once.
type benchUpstreams struct {
	cat      atomic.Pointer[upstream.Catalog]
	statuses atomic.Pointer[[]upstream.Status]
}

func newBenchUpstreams(tools []upstream.Tool) *benchUpstreams {
	u := &benchUpstreams{}
	u.set(upstream.NewCatalog(tools))
	return u
}

// set replaces the catalog (its servers all connected); the caller tells the proxy.
func (u *benchUpstreams) set(cat *upstream.Catalog) {
	var sts []upstream.Status
	for _, t := range cat.Tools {
		if len(sts) == 0 || sts[len(sts)-1].Name != t.Server {
			sts = append(sts, upstream.Status{Name: t.Server, State: upstream.StateConnected})
		}
		sts[len(sts)-1].Tools++
	}
	u.statuses.Store(&sts)
	u.cat.Store(cat)
}

func (u *benchUpstreams) Catalog() *upstream.Catalog                   { return u.cat.Load() }
func (u *benchUpstreams) Statuses() []upstream.Status                  { return *u.statuses.Load() }
func (u *benchUpstreams) WaitStarted(context.Context) []string         { return nil }
func (u *benchUpstreams) Denied(string) (serverName string, ok bool)   { return "", false }
func (u *benchUpstreams) ServerOf(string) (serverName string, ok bool) { return "", false }
func (u *benchUpstreams) Call(context.Context, string, json.RawMessage, any, func(json.RawMessage)) (json.RawMessage, error) {
	return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
}
func (u *benchUpstreams) NeedsSignIn(context.Context, identity.User, string) bool { return false }
func (u *benchUpstreams) Learn(context.Context, identity.User, string) error      { return nil }
func (u *benchUpstreams) Request(context.Context, string, string, any) (json.RawMessage, error) {
	return nil, &upstream.RPCError{Code: -32601, Message: "method not found"}
}

// benchClient is one in-process session: a ClientSession registered with mcp-go whose
// notifications are read and dropped.
type benchClient struct {
	id     string
	notes  chan mcp.JSONRPCNotification
	inited atomic.Bool
	ctx    context.Context
	p      *Server
	out    countingWriter // what rpc wrote
	nextID atomic.Int64
}

// countingWriter counts the bytes of the last write.
type countingWriter struct{ last atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.last.Store(int64(len(p)))
	return len(p), nil
}

func (c *benchClient) Initialize()                                         { c.inited.Store(true) }
func (c *benchClient) Initialized() bool                                   { return c.inited.Load() }
func (c *benchClient) NotificationChannel() chan<- mcp.JSONRPCNotification { return c.notes }
func (c *benchClient) SessionID() string                                   { return c.id }

var _ server.ClientSession = (*benchClient)(nil)

// benchSession opens a session on p as the named client. Its notifications are dropped by
// one goroutine per session, ended when the benchmark ends; sessions meant to be many
// (noDrain) get a channel big enough instead.
func benchSession(tb testing.TB, p *Server, id, client string, drain bool) *benchClient {
	tb.Helper()
	return benchSessionOf(tb, identity.User{}, p, id, client, drain)
}

// benchSessionOf is benchSession for a session that u opened.
func benchSessionOf(tb testing.TB, u identity.User, p *Server, id, client string, drain bool) *benchClient {
	tb.Helper()
	c := &benchClient{id: id, p: p}
	if drain {
		c.notes = make(chan mcp.JSONRPCNotification, 16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range c.notes {
			}
		}()
		tb.Cleanup(func() { close(c.notes); <-done })
	} else {
		c.notes = make(chan mcp.JSONRPCNotification, 1<<10)
	}
	if err := p.mcp.RegisterSession(identity.NewContext(context.Background(), u), c); err != nil {
		tb.Fatal(err)
	}
	c.ctx = p.mcp.WithContext(context.Background(), c)
	c.rpc(tb, "initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": client, "version": "1"},
	})
	c.Initialize()
	return c
}

// rpc sends one request and returns the size of its response as the transport wrote it.
func (c *benchClient) rpc(tb testing.TB, method string, params any) int {
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.nextID.Add(1), "method": method, "params": params})
	if err != nil {
		tb.Fatal(err)
	}
	resp := c.p.mcp.HandleMessage(c.ctx, msg)
	out, err := json.Marshal(resp)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := c.out.Write(out); err != nil {
		tb.Fatal(err)
	}
	if _, isErr := resp.(mcp.JSONRPCError); isErr {
		tb.Fatalf("%s: %s", method, out)
	}
	return int(c.out.last.Load())
}

// search runs tool_search and returns the size of its response.
func (c *benchClient) search(tb testing.TB, query string, max int) int {
	return c.rpc(tb, "tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": query, "max_results": max}})
}

// benchProxy is a proxy over n benchmark tools, with every index built.
func benchProxy(tb testing.TB, n int, opts Options) (*Server, *benchUpstreams) {
	tb.Helper()
	ups := newBenchUpstreams(benchTools(tb, n))
	opts.ListWait = cmpOr(opts.ListWait, 50*time.Millisecond)
	p := New(ups, opts)
	p.CatalogChanged()
	return p, ups
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}

// unlockAll has c unlock the given tools through select:, 25 at a time.
func (c *benchClient) unlockAll(tb testing.TB, tools []upstream.Tool) {
	for chunk := range slices.Chunk(tools, maxResults) {
		var names []string
		for _, t := range chunk {
			names = append(names, t.Exposed)
		}
		c.search(tb, "select:"+strings.Join(names, ","), maxResults)
	}
}

// BenchmarkToolsList lists the tools of a session that unlocked 0 or 500 of 1,142 tools.
func BenchmarkToolsList(b *testing.B) {
	for _, unlocked := range []int{0, 500} {
		b.Run(fmt.Sprintf("unlocked=%d", unlocked), func(b *testing.B) {
			p, ups := benchProxy(b, 1142, Options{MaxUnlocked: 1000})
			c := benchSession(b, p, "s", "codex-mcp-client", true)
			c.unlockAll(b, ups.Catalog().Tools[:unlocked])
			b.ReportAllocs()
			var size int
			for b.Loop() {
				size = c.rpc(b, "tools/list", map[string]any{})
			}
			b.ReportMetric(float64(size), "bytes/list")
		})
	}
}

// searchQueries are keyword queries of the evaluation sets' kinds.
var searchQueries = []string{"create issue", "take a screenshot of the page", "crete isue", "+github search code", "send a message to a channel", "list files in a directory"}

// BenchmarkSearch runs tool_search in one session over catalogs of 1,000 to 50,000 tools,
// each index already built.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			p, _ := benchProxy(b, n, Options{})
			c := benchSession(b, p, "s", "codex-mcp-client", true)
			c.search(b, "create issue", 5) // the first search of a catalog may build its index
			b.ReportAllocs()
			i, size := 0, 0
			for b.Loop() {
				size = c.search(b, searchQueries[i%len(searchQueries)], 5)
				i++
			}
			b.ReportMetric(float64(size), "bytes/result")
		})
	}
}

// BenchmarkSearchAccess runs tool_search over 10,000 tools, half of which only the group
// eng may use: for the local user, who may use every tool, and for a person outside eng,
// for whom the whole catalog is ranked so that the tools they may use fill the limit.
func BenchmarkSearchAccess(b *testing.B) {
	tools := benchTools(b, 10000)
	for i := range tools {
		if i%2 == 1 {
			tools[i].Access = &config.Access{Groups: []string{"eng"}}
		}
	}
	for _, who := range []struct {
		name string
		u    identity.User
	}{{"local", identity.User{}}, {"person", identity.User{Kind: identity.Person, Name: "ann", Key: "ann"}}} {
		b.Run(who.name, func(b *testing.B) {
			ups := newBenchUpstreams(tools)
			p := New(ups, Options{ListWait: 50 * time.Millisecond})
			p.CatalogChanged()
			c := benchSessionOf(b, who.u, p, "s", "codex-mcp-client", true)
			c.search(b, "create issue", 5)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.search(b, searchQueries[i%len(searchQueries)], 5)
				i++
			}
		})
	}
}

// BenchmarkDuringRebuild searches, or calls one of 20 tools it unlocked, in one session of a
// proxy over 50,000 tools while the catalog keeps changing under it (a tool's description,
// every 100 ms, as a server re-listing would), and reports the latency percentiles of those
// requests. "idle" is the same without changes.
func BenchmarkDuringRebuild(b *testing.B) {
	const n = 50000
	tools := benchTools(b, n)
	changed := slices.Clone(tools)
	changed[n/2].Description += " (changed)"
	cats := []*upstream.Catalog{upstream.NewCatalog(tools), upstream.NewCatalog(changed)}
	for _, op := range []string{"search", "call"} {
		for _, churn := range []bool{false, true} {
			name := op + "/idle"
			if churn {
				name = op + "/changing"
			}
			b.Run(name, func(b *testing.B) {
				ups := &benchUpstreams{}
				ups.set(cats[0])
				p := New(ups, Options{ListWait: 50 * time.Millisecond})
				p.CatalogChanged()
				c := benchSession(b, p, "s", "codex-mcp-client", true)
				c.search(b, "create issue", 5)
				const called = 20
				for _, t := range tools[:called] {
					c.rpc(b, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": t.Exposed, "arguments": map[string]any{}}})
				}
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if churn {
					wg.Go(func() {
						tick := time.NewTicker(100 * time.Millisecond)
						defer tick.Stop()
						for i := 1; ; i++ {
							select {
							case <-stop:
								return
							case <-tick.C:
							}
							ups.set(cats[i%2])
							p.CatalogChanged()
						}
					})
				}
				var lat []time.Duration
				i := 0
				for b.Loop() {
					start := time.Now()
					if op == "search" {
						c.search(b, searchQueries[i%len(searchQueries)], 5)
					} else {
						c.rpc(b, "tools/call", map[string]any{"name": CallTool, "arguments": map[string]any{"name": tools[i%called].Exposed, "arguments": map[string]any{}}})
					}
					lat = append(lat, time.Since(start))
					i++
					time.Sleep(time.Millisecond) // a client's pace, not a tight loop
				}
				close(stop)
				wg.Wait()
				reportPercentiles(b, lat)
			})
		}
	}
}

// reportPercentiles reports the 50th and 99th percentiles and the maximum of lat, in ms.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}

// BenchmarkSessions opens 1,000 or 10,000 sessions, each of which unlocked 5 tools, and
// reports the heap each costs, and the latency of a tools/list, a tool_search, and a
// catalog change (one unlocked tool's description) in their midst.
func BenchmarkSessions(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			p, ups := benchProxy(b, 1142, Options{})
			cat := ups.Catalog()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			clients := make([]*benchClient, n)
			for i := range clients {
				clients[i] = benchSession(b, p, fmt.Sprint("s", i), "codex-mcp-client", false)
				start := (i * 5) % (len(cat.Tools) - 5)
				clients[i].unlockAll(b, cat.Tools[start:start+5])
				for len(clients[i].notes) > 0 {
					<-clients[i].notes
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perSession := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
			drain := func() {
				for _, c := range clients {
					for len(c.notes) > 0 {
						<-c.notes
					}
				}
			}
			b.Run("list", func(b *testing.B) {
				i := 0
				for b.Loop() {
					clients[i%n].rpc(b, "tools/list", map[string]any{})
					i++
				}
				b.ReportMetric(perSession, "bytes/session")
			})
			b.Run("search", func(b *testing.B) {
				i := 0
				for b.Loop() {
					clients[i%n].search(b, searchQueries[i%len(searchQueries)], 5)
					i++
					if i%512 == 0 {
						b.StopTimer()
						drain()
						b.StartTimer()
					}
				}
			})
			b.Run("change", func(b *testing.B) {
				changed := slices.Clone(cat.Tools)
				changed[2].Description += " (changed)"
				cats := []*upstream.Catalog{cat, upstream.NewCatalog(changed)}
				i := 0
				for b.Loop() {
					i++
					ups.set(cats[i%2])
					p.CatalogChanged()
					b.StopTimer()
					drain()
					b.StartTimer()
				}
				ups.set(cat)
				p.CatalogChanged()
			})
		})
	}
}

// BenchmarkHTTPSessionMemory opens 100 sessions over streamable HTTP, each of which searches
// (unlocking 5 tools) and calls a tool, with and without a held GET stream, and reports the
// heap each costs the server (toolsift and mcp-go's server) and the client side of the same
// process, told apart by where the memory still in use was allocated.
func BenchmarkHTTPSessionMemory(b *testing.B) {
	url, _ := proxyOver(b, echoUpstream(b, 20))
	const n = 100
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			for b.Loop() {
				rate := runtime.MemProfileRate
				runtime.MemProfileRate = 1
				before := heapBySide()
				var clients []*client.Client
				for range n {
					c := dialHTTP(b, url, stream)
					if _, err := callTool(c, SearchTool, map[string]any{"query": "echo tool", "max_results": 5}); err != nil {
						b.Fatal(err)
					}
					if _, err := callTool(c, "call_tool", map[string]any{"name": "up__tool_000"}); err != nil {
						b.Fatal(err)
					}
					clients = append(clients, c)
				}
				time.Sleep(100 * time.Millisecond) // let every GET stream settle
				after := heapBySide()
				runtime.MemProfileRate = rate
				b.ReportMetric(float64(after.server-before.server)/n, "server-bytes/session")
				b.ReportMetric(float64(after.toolsift-before.toolsift)/n, "toolsift-bytes/session")
				b.ReportMetric(float64(after.client-before.client)/n, "client-bytes/session")
				for _, c := range clients {
					c.Close()
				}
			}
		})
	}
}

// dialHTTP opens a session over streamable HTTP, holding a GET stream if stream is set.
func dialHTTP(tb testing.TB, url string, stream bool) *client.Client {
	var opts []transport.StreamableHTTPCOption
	if stream {
		opts = append(opts, transport.WithContinuousListening())
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "load", Version: "1"}
	if _, err := c.Initialize(context.Background(), req); err != nil {
		tb.Fatal(err)
	}
	return c
}

// heapSides is the heap in use, by the side of the process that allocated it.
type heapSides struct{ client, server, toolsift int64 }

// heapBySide sums the heap in use after a GC by allocation site: the client side (mcp-go's
// client and net/http's client transport), toolsift's proxy package, and the rest of the
// server side (mcp-go's server, net/http's server). Memory allocated elsewhere (the
// runtime, tests) is left out.
func heapBySide() heapSides {
	runtime.GC()
	runtime.GC() // the profile shows the heap as of the last GC but one
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, false); ok {
			recs = recs[:n]
			break
		}
	}
	var h heapSides
	for _, r := range recs {
		side := ""
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			fn := f.Function
			switch {
			case strings.Contains(fn, "mcp-go/client"), strings.Contains(fn, "net/http.(*Transport)"), strings.Contains(fn, "net/http.(*persistConn)"):
				side = "client"
			case strings.Contains(fn, "toolsift/proxy.(*"), strings.Contains(fn, "toolsift/proxy.New"):
				if side == "" && !strings.Contains(fn, "Benchmark") && !strings.Contains(fn, "dialHTTP") {
					side = "toolsift"
				}
			case strings.Contains(fn, "mcp-go/server"), strings.Contains(fn, "net/http.(*conn)"), strings.Contains(fn, "net/http.(*Server)"):
				if side == "" {
					side = "server"
				}
			}
			if side == "client" || !more {
				break
			}
		}
		switch side {
		case "client":
			h.client += r.InUseBytes()
		case "server":
			h.server += r.InUseBytes()
		case "toolsift":
			h.toolsift += r.InUseBytes()
			h.server += r.InUseBytes()
		}
	}
	return h
}

// BenchmarkStdio sends a ping, or a tool_search over 1,000 tools, through ServeStdio over
// in-memory pipes and reads its answer: what one request costs toolsift's stdio transport,
// without the operating system's pipes and wake-ups.
func BenchmarkStdio(b *testing.B) {
	p, _ := benchProxy(b, 1000, Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- p.ServeStdio(context.Background(), inR, outW) }()
	defer func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		if err := <-served; err != nil {
			b.Error(err)
		}
	}()
	out := bufio.NewReader(outR)
	id := 0
	// request sends a request and reads up to its answer.
	request := func(method, params string) {
		id++
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		want := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,`, id)
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			if bytes.HasPrefix(line, want) {
				if bytes.Contains(line, []byte(`"isError":true`)) || bytes.HasPrefix(line[len(want):], []byte(`"error":`)) {
					b.Fatalf("%s: %s", method, line)
				}
				return
			}
		}
	}
	request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"codex-mcp-client","version":"1"}}`)
	fmt.Fprintln(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	search := `{"name":"tool_search","arguments":{"query":"create issue","max_results":5}}`
	request("tools/call", search) // the first search of a catalog may build its index
	b.Run("ping", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			request("ping", "{}")
		}
	})
	b.Run("search", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			request("tools/call", search)
		}
	})
	// tools/list with 30 tools unlocked, as after a session's first searches.
	for _, q := range []string{"create issue", "send message", "list files", "read file", "query database", "update ticket"} {
		request("tools/call", fmt.Sprintf(`{"name":"tool_search","arguments":{"query":%q,"max_results":5}}`, q))
	}
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			request("tools/list", "{}")
		}
	})
}
