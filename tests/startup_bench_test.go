package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var plain struct {
	once              sync.Once
	toolsift, fixture string
	err               error
}

// plainBuilds builds toolsift and the fixture without the race detector, which would
// dominate start-up times.
func plainBuilds(b *testing.B) (toolsift, fixture string) {
	b.Helper()
	plain.once.Do(func() {
		dir, err := os.MkdirTemp("", "toolsift-bench")
		if err != nil {
			plain.err = err
			return
		}
		plain.toolsift, plain.fixture = filepath.Join(dir, "toolsift"), filepath.Join(dir, "fixture")
		for _, p := range [][]string{{plain.toolsift, ".."}, {plain.fixture, "./fixture"}} {
			if out, err := exec.Command("go", "build", "-o", p[0], p[1]).CombinedOutput(); err != nil {
				plain.err = fmt.Errorf("building %s: %v\n%s", p[1], err, out)
				return
			}
		}
	})
	if plain.err != nil {
		b.Fatal(plain.err)
	}
	return plain.toolsift, plain.fixture
}

// startupConfig configures n fixture servers, each serving one of the benchmark catalogs
// after a start delay, with its first tool always loaded.
func startupConfig(b *testing.B, fixture string, n int, delay time.Duration, lazy bool) (cfg string, alwaysLoad []string) {
	b.Helper()
	files, _ := filepath.Glob(filepath.Join(catalogs, "*.json"))
	if len(files) < n {
		b.Fatalf("%d catalogs, want %d", len(files), n)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "lazyStart: %v\nmcpServers:\n", lazy)
	for i, f := range files[:n] {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		var list struct{ Tools []struct{ Name string } }
		if err := json.Unmarshal(data, &list); err != nil || len(list.Tools) == 0 {
			b.Fatalf("%s: %v", f, err)
		}
		name := fmt.Sprintf("s%02d", i)
		fmt.Fprintf(&sb, "  %s:\n    command: %q\n    args: [--builtins=false, --catalog, %q, --start-delay, %s]\n    alwaysLoad: [%q]\n",
			name, fixture, f, delay, list.Tools[0].Name)
		alwaysLoad = append(alwaysLoad, name+"__"+list.Tools[0].Name)
	}
	return config(b, sb.String()), alwaysLoad
}

// BenchmarkStartup measures, from exec, how long toolsift takes to answer initialize and
// tools/list in front of 40 servers that each take 2 s to start: with an empty catalog
// cache (cold), with a cache (warm), and with a cache and lazyStart (nothing is spawned).
// It also reports how long the first tool_search took (search-ms), how many of the 40
// always-load tools that first tools/list had (always-load), and how many servers were
// running when it was answered (spawned).
func BenchmarkStartup(b *testing.B) {
	toolsift, fixture := plainBuilds(b)
	const servers, delay = 40, 2 * time.Second
	for _, mode := range []struct {
		name       string
		warm, lazy bool
	}{{"cold", false, false}, {"warm", true, false}, {"warm-lazy", true, true}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg, always := startupConfig(b, fixture, servers, delay, mode.lazy)
			env := isolatedEnv(b)
			if mode.warm {
				warmCache(b, env, toolsift, cfg, "warm the cache")
			}
			var searchTotal time.Duration
			var seen, spawned int
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if !mode.warm {
					env = isolatedEnv(b)
				}
				b.StartTimer()
				c := startWith(b, env, toolsift, "--config", cfg)
				c.mu.Lock()
				c.relist = true // as Claude Code does; otherwise tool_search waits for a re-list
				c.mu.Unlock()
				c.initialize()
				tools := c.listTools()
				b.StopTimer()
				spawned += len(childrenOf(b, c.cmd.Process.Pid))
				for _, name := range always {
					if slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == name }) {
						seen++
					}
				}
				start := time.Now()
				c.search("create issue", 5)
				searchTotal += time.Since(start)
				c.stdin.Close()
				<-c.done
				b.StartTimer()
			}
			b.ReportMetric(float64(searchTotal.Milliseconds())/float64(b.N), "search-ms")
			b.ReportMetric(float64(seen)/float64(b.N), "always-load")
			b.ReportMetric(float64(spawned)/float64(b.N), "spawned")
		})
	}
}
