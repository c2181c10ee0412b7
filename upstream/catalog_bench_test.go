package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/cputime"
)

// benchConn is an in-memory server that answers tools/list with a fixed result, so that a
// benchmark measures the pool and not a fake's JSON encoding.
type benchConn struct {
	mu   sync.Mutex // guards list
	list json.RawMessage
	lost chan struct{}
	once sync.Once
}

func newBenchConn(list json.RawMessage) *benchConn {
	return &benchConn{list: list, lost: make(chan struct{})}
}

func (c *benchConn) Request(_ context.Context, method string, _ any) (json.RawMessage, error) {
	if method != "tools/list" {
		return nil, &RPCError{Code: -32601, Message: "method not found"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list, nil
}

func (c *benchConn) setList(list json.RawMessage) {
	c.mu.Lock()
	c.list = list
	c.mu.Unlock()
}

func (c *benchConn) Close() error          { c.once.Do(func() { close(c.lost) }); return nil }
func (c *benchConn) Lost() <-chan struct{} { return c.lost }
func (c *benchConn) Err() error            { return nil }

// benchCatalog is one of the public catalogs in bench/catalogs.
type benchCatalog struct {
	name  string
	list  json.RawMessage // its tools/list result
	tools int
}

// benchCatalogs returns the public catalogs in bench/catalogs, by file name, without
// azure-all (another view of azure; see its README).
func benchCatalogs(b *testing.B) []benchCatalog {
	b.Helper()
	files, _ := filepath.Glob("../bench/catalogs/*.json")
	var cats []benchCatalog
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if name == "azure-all" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var list struct{ Tools []json.RawMessage }
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
		cats = append(cats, benchCatalog{name: name, list: data, tools: len(list.Tools)})
	}
	if len(cats) < 40 {
		b.Fatalf("%d catalogs in ../bench/catalogs, want 41", len(cats))
	}
	return cats
}

// benchPool returns a pool of n stdio servers, each serving the catalogs in turn under a name
// and prefix of its own, the connections their dials return, and how many tools they list.
// Each takes startDelay to start. RelistInterval is 1µs, so that a benchmark can re-list
// one server without end.
func benchPool(cats []benchCatalog, n int, startDelay time.Duration, onChange func()) (*Pool, map[string]*benchConn, map[string]Notify, int) {
	var servers []config.Server
	conns := map[string]*benchConn{}
	tools := 0
	for i := range n {
		cat := cats[i%len(cats)]
		name := fmt.Sprintf("%s%d", cat.name, i/len(cats))
		servers = append(servers, config.Server{Name: name, Prefix: name, Type: config.TypeStdio, Command: "fake"})
		conns[name] = newBenchConn(cat.list)
		tools += cat.tools
	}
	var mu sync.Mutex
	notify := map[string]Notify{}
	pool := NewPool(servers, Options{
		RelistInterval: time.Microsecond,
		Dial: func(ctx context.Context, srv config.Server, _ *Tail, n Notify, _ Peer) (Conn, Info, error) {
			if startDelay > 0 {
				select {
				case <-time.After(startDelay):
				case <-ctx.Done():
					return nil, Info{}, ctx.Err()
				}
			}
			mu.Lock()
			notify[srv.Name] = n
			mu.Unlock()
			c := conns[srv.Name]
			c.mu.Lock()
			defer c.mu.Unlock()
			// A new connection to the same server: a lost channel of its own.
			c.lost, c.once = make(chan struct{}), sync.Once{}
			return c, Info{}, nil
		},
	})
	pool.Start(Hooks{OnChange: onChange})
	return pool, conns, notify, tools
}

// BenchmarkConnect measures what it costs the pool to connect 41, 182 and 365 servers, each
// listing one of the public catalogs (1,142 tools per 41 servers): from NewPool until every
// server is connected and in the catalog. The servers start at once (start=0), or take 20ms
// each to start, eight at a time (MaxStarting), as stdio servers do, so that they connect
// in a stream rather than all together. cpu-ms is the process's CPU time, on every core and
// with the garbage collector; changes is how many times OnChange was called, each of which
// costs a proxy a look at the catalog.
func BenchmarkConnect(b *testing.B) {
	cats := benchCatalogs(b)
	for _, n := range []int{41, 182, 365} {
		for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
			b.Run(fmt.Sprintf("servers=%d/start=%v", n, delay), func(b *testing.B) {
				b.ReportAllocs()
				var cpu time.Duration
				var changes int
				for range b.N {
					b.StopTimer()
					runtime.GC()
					var calls int
					var mu sync.Mutex
					onChange := func() { mu.Lock(); calls++; mu.Unlock() }
					start := cputime.Self()
					b.StartTimer()
					pool, _, _, tools := benchPool(cats, n, delay, onChange)
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					pending := pool.WaitStarted(ctx)
					cancel()
					got := len(pool.Catalog().Tools)
					b.StopTimer()
					cpu += cputime.Self() - start
					mu.Lock()
					changes += calls
					mu.Unlock()
					pool.Close()
					if len(pending) > 0 || got != tools {
						b.Fatalf("%d tools in the catalog, want %d (pending %v)", got, tools, pending)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(changes)/float64(b.N), "changes/op")
			})
		}
	}
}

// BenchmarkRelist measures one server re-listing, with a tool more or one fewer, in a pool
// of 365 servers and 10,000 tools: from its list_changed until the catalog has the change.
// Each re-list comes alone, a while after the last, as they do once servers are up; run it
// with -benchtime 40x or so, since each waits 300ms first.
func BenchmarkRelist(b *testing.B) {
	changed := make(chan struct{}, 1)
	pool, conns, notify, tools := benchPool(benchCatalogs(b), 365, 0, func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if pending := pool.WaitStarted(ctx); len(pending) > 0 || len(pool.Catalog().Tools) != tools {
		b.Fatalf("%d tools in the catalog, want %d (pending %v)", len(pool.Catalog().Tools), tools, pending)
	}
	// github0: 26 tools, about the median server.
	const name = "github0"
	var list struct{ Tools []json.RawMessage }
	if err := json.Unmarshal(conns[name].list, &list); err != nil {
		b.Fatal(err)
	}
	without := conns[name].list
	with, _ := json.Marshal(map[string]any{"tools": append(slices.Clone(list.Tools), rawTool("bench_extra"))})
	b.ReportAllocs()
	var cpu time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		added := i%2 == 0
		conns[name].setList(map[bool]json.RawMessage{true: with, false: without}[added])
		// Longer than any pacing of builds in a stream of changes: this change is alone.
		time.Sleep(300 * time.Millisecond)
		for len(changed) > 0 {
			<-changed
		}
		start := cputime.Self()
		b.StartTimer()
		notify[name]("notifications/tools/list_changed", nil)
		for {
			<-changed
			if _, ok := pool.Catalog().Lookup(name + "__bench_extra"); ok == added {
				break
			}
		}
		b.StopTimer()
		cpu += cputime.Self() - start
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(tools), "tools")
}
