package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/cputime"
	"github.com/toolsift/toolsift/internal/jsonrpc"
	"github.com/toolsift/toolsift/internal/mcptest"
	"github.com/toolsift/toolsift/search"
)

// BenchmarkToolSearchStdio measures tool_search end to end, through the built binary over
// stdio, at 1,000, 10,000 and 50,000 tools (the bench catalogs repeated under renamed tools,
// served by fixtures of at most 2,000 tools each), as two clients:
//   - codex-mcp-client reads the result as it comes (toolsift does not hold it);
//   - claude-code re-lists on list_changed, and toolsift holds the result until that list
//     is written, so each search includes its re-list.
//
// The queries are those of bench/en.yaml and bench/zh.yaml, in turn. The first startSearches
// after the first are reported apart (start-p50-ms, start-p99-ms, start-faults/op): they are
// the ones during which toolsift's heap grows to its working size, and on this benchmark's
// machine, a VM, each page it touches for the first time costs a fault of about 20 µs. Then
// b.N searches give the median and p99 (p50-ms, p99-ms), the slowest query's median, and
// toolsift's CPU time and page faults per search; and a ping the same, as the floor under a
// search. CPU time varies less from run to run than latency. The client decodes nothing but
// ids, so the figures are toolsift's and the pipes'.
func BenchmarkToolSearchStdio(b *testing.B) {
	toolsift, fixture := plainBuilds(b)
	var queries []string
	for _, set := range []string{"en.yaml", "zh.yaml"} {
		cases, err := search.LoadCases(filepath.Join(catalogs, "..", set))
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cases {
			queries = append(queries, c.Query)
		}
	}
	tools := benchTools(b)
	for _, n := range []int{1_000, 10_000, 50_000} {
		for _, client := range []string{"codex-mcp-client", "claude-code"} {
			b.Run(fmt.Sprintf("tools=%d/client=%s", n, client), func(b *testing.B) {
				cfg := manyToolsConfig(b, fixture, tools, n)
				c := startLean(b, toolsift, client, client == "claude-code", "--config", cfg)
				// The first search waits for the servers and the index.
				if res := c.search("create issue"); !bytes.Contains(res, []byte(`"name\":`)) {
					b.Fatalf("first search: %s", res)
				}
				// run does n requests, and returns their latencies and a report of toolsift's
				// usage meanwhile, under names prefixed by prefix.
				run := func(n int, prefix string, do func(i int)) ([]time.Duration, func()) {
					lat := make([]time.Duration, 0, n)
					u0, ok0 := cputime.Of(c.pid)
					for i := range n {
						start := time.Now()
						do(i)
						lat = append(lat, time.Since(start))
					}
					u1, ok1 := cputime.Of(c.pid)
					return lat, func() {
						if ok0 && ok1 {
							b.ReportMetric(float64((u1.CPU-u0.CPU).Microseconds())/float64(n), "toolsift-"+prefix+"cpu-us/op")
							b.ReportMetric(float64(u1.Faults-u0.Faults)/float64(n), prefix+"faults/op")
						}
						reportLatency(b, lat, prefix)
					}
				}
				search := func(i int) { c.search(queries[i%len(queries)]) }
				_, reportStart := run(startSearches, "start-", search)

				b.ResetTimer() // which forgets the metrics reported so far
				lat, report := run(b.N, "", search)
				b.StopTimer()
				// Whether the tail is some queries' or every query's now and then.
				byQuery := map[string][]time.Duration{}
				for i, l := range lat {
					q := queries[i%len(queries)]
					byQuery[q] = append(byQuery[q], l)
				}
				reportStart()
				report() // which sorts lat
				var worst time.Duration
				for _, l := range byQuery {
					slices.Sort(l)
					worst = max(worst, l[len(l)/2])
				}
				b.ReportMetric(float64(worst.Microseconds())/1000, "worst-query-p50-ms")
				// 3,000: enough for the CPU time's 10 ms tick.
				_, reportPings := run(3000, "ping-", func(int) { c.request("ping", "{}") })
				reportPings()
			})
		}
	}
}

// startSearches is how many searches after toolsift's first are reported apart, as the
// searches of its start (see BenchmarkToolSearchStdio): at 10,000 tools its heap stops
// growing after 2,000 to 3,000.
const startSearches = 3000

// reportLatency reports the median and p99 of lat, in ms, under names prefixed by prefix.
func reportLatency(b *testing.B, lat []time.Duration, prefix string) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, prefix+"p99-ms")
}

// leanClient is an MCP client over stdio that reads of each message only what it must:
// whether it is an answer, and to what, or list_changed. It reads the answer to a request
// on the goroutine that sent it, so that no hand-off between its own threads is measured.
// The benchmarks measure toolsift with it, not a client's decoding or scheduling.
type leanClient struct {
	tb      testing.TB
	in      io.WriteCloser
	out     *os.File // toolsift's stdout, read with a deadline
	r       *bufio.Reader
	relist  bool // re-list on list_changed, as Claude Code does
	relists int
	nextID  int
	pid     int // toolsift's
}

// startLean starts toolsift with args and initializes a session as client; with relist, the
// client re-lists on each list_changed, as Claude Code does.
func startLean(tb testing.TB, toolsift, client string, relist bool, args ...string) *leanClient {
	tb.Helper()
	cmd := exec.Command(toolsift, args...)
	cmd.Env = isolatedEnv(tb)
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stderr := &mcptest.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	c := &leanClient{tb: tb, in: in, out: out.(*os.File), r: bufio.NewReaderSize(out, 1<<20), relist: relist, pid: cmd.Process.Pid}
	tb.Cleanup(func() {
		in.Close()
		// What is still written, so that toolsift can end; read to the end before Wait,
		// which closes the pipe.
		c.out.SetReadDeadline(time.Now().Add(30 * time.Second))
		io.Copy(io.Discard, c.r)
		if err := cmd.Wait(); err != nil {
			tb.Errorf("toolsift: %v\n%s", err, stderr)
		}
	})
	c.request("initialize", fmt.Sprintf(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":%q,"version":"1"}}`, client))
	c.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *leanClient) write(msg string) {
	if _, err := io.WriteString(c.in, msg+"\n"); err != nil {
		c.tb.Fatalf("writing to toolsift: %v", err)
	}
}

// request sends a request and returns its answer, failing on an error answer. It answers
// toolsift's own requests meanwhile, and re-lists on list_changed if the client does.
func (c *leanClient) request(method, params string) []byte {
	c.nextID++
	want := fmt.Sprint(c.nextID)
	c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.nextID, method, params))
	c.out.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := c.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			rest, _ := c.r.ReadBytes('\n')
			line, err = append(bytes.Clone(line), rest...), nil
		}
		if err != nil {
			c.tb.Fatalf("%s: reading toolsift's answer: %v", method, err)
		}
		switch id := jsonrpc.IDOfEnds(line, line); {
		case bytes.HasPrefix(line, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"`)):
			if c.relist {
				c.relists++ // each its own id: two lists in flight under one would be ambiguous
				c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":"relist-%d","method":"tools/list"}`, c.relists))
			}
		case bytes.HasPrefix(id, []byte(`"relist-`)):
		case id != nil && bytes.Contains(line[:min(len(line), 64)], []byte(`"method":`)):
			c.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, id)) // a request of toolsift's
		case string(id) == want:
			if bytes.HasPrefix(line, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error"`, want))) || bytes.Contains(line, []byte(`"isError":true`)) {
				c.tb.Fatalf("%s: %s", method, line)
			}
			return line // valid until the next read
		case id != nil:
			c.tb.Fatalf("%s: answer to %s, want %s", method, id, want)
		}
	}
}

// search calls tool_search for 5 matches and returns the raw answer.
func (c *leanClient) search(query string) []byte {
	q, _ := json.Marshal(query)
	return c.request("tools/call", fmt.Sprintf(`{"name":"tool_search","arguments":{"query":%s,"max_results":5}}`, q))
}

// benchTools reads every tool of the bench catalogs (azure-all left out), raw.
func benchTools(b *testing.B) []map[string]any {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join(catalogs, "*.json"))
	var all []map[string]any
	for _, f := range files {
		if strings.HasSuffix(f, "azure-all.json") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var list struct{ Tools []map[string]any }
		if err := json.Unmarshal(data, &list); err != nil {
			b.Fatal(err)
		}
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		for _, t := range list.Tools {
			t["name"] = server + "_" + t["name"].(string) // keep the service's name in reach of queries
			all = append(all, t)
		}
	}
	return all
}

// manyToolsConfig writes fixtures serving n tools, cycling through tools with a round
// suffix, at most 2,000 a server, and a config for them.
func manyToolsConfig(b *testing.B, fixture string, tools []map[string]any, n int) string {
	b.Helper()
	dir := b.TempDir()
	var sb strings.Builder
	sb.WriteString("mcpServers:\n")
	for s := 0; s*2000 < n; s++ {
		var part []map[string]any
		for i := s * 2000; i < min(n, (s+1)*2000); i++ {
			t := maps.Clone(tools[i%len(tools)]) // renamed below: the original stays
			if round := i / len(tools); round > 0 {
				t["name"] = fmt.Sprintf("%s_r%d", t["name"], round)
				// Only the first copy of an always-load tool is one: with every copy, the
				// always-load list, and each re-list with it, would grow with the catalog.
				if meta, ok := t["_meta"].(map[string]any); ok {
					meta = maps.Clone(meta)
					delete(meta, "anthropic/alwaysLoad")
					t["_meta"] = meta
				}
			}
			part = append(part, t)
		}
		data, _ := json.Marshal(map[string]any{"tools": part})
		file := filepath.Join(dir, fmt.Sprintf("s%02d.json", s))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&sb, "  s%02d:\n    command: %q\n    args: [--builtins=false, --catalog, %q]\n", s, fixture, file)
	}
	return config(b, sb.String())
}
