package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/search"
)

// BenchmarkToolSearchStdio measures tool_search end to end, through the built binary over
// stdio, at 1,000, 10,000 and 50,000 tools (the bench catalogs repeated under renamed tools,
// served by fixtures of at most 2,000 tools each). The client re-lists on list_changed, as
// Claude Code does, so each search includes its re-list. It reports the median and p99 of
// the queries of bench/en.yaml and bench/zh.yaml, in turn.
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
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			cfg := manyToolsConfig(b, fixture, tools, n)
			c := startWith(b, isolatedEnv(b), toolsift, "--config", cfg)
			c.mu.Lock()
			c.relist = true
			c.mu.Unlock()
			c.initialize()
			if sr := c.search("create issue", 5); len(sr.Matches) == 0 { // waits for the servers and the index
				b.Fatalf("first search = %+v", sr)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				c.search(queries[i%len(queries)], 5)
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
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
