package tests

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	tsconfig "github.com/toolsift/toolsift/config"
)

// runAll runs each command line of toolsift at once, and fails the test if any fails.
func runAll(t *testing.T, env []string, lines [][]string) {
	t.Helper()
	var wg sync.WaitGroup
	for _, args := range lines {
		wg.Go(func() {
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("toolsift %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
	wg.Wait()
}

func serverNames(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tsconfig.Parse(file, data, func(string) (string, bool) { return "", true })
	if err != nil {
		t.Fatalf("the configuration no longer loads: %v\n%s", err, data)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// TestConcurrentEditsLoseNothing (issue 39, attack 14): rounds of toolsift add at once,
// then adds and removes at once, against one configuration: every change lands.
func TestConcurrentEditsLoseNothing(t *testing.T) {
	env := isolatedEnv(t)
	file := config(t, "mcpServers:\n  base:\n    command: echo\n")
	want := []string{"base"}
	for round := range 25 {
		var lines [][]string
		for i := range 3 {
			name := fmt.Sprintf("s%02d_%d", round, i)
			want = append(want, name)
			lines = append(lines, []string{"add", name, "--config", file, "--", "echo", name})
		}
		runAll(t, env, lines)
	}
	slices.Sort(want)
	if got := serverNames(t, file); !slices.Equal(got, want) {
		t.Fatalf("after 75 concurrent adds: %d servers, want %d; missing %v", len(got), len(want), missing(want, got))
	}

	var lines [][]string
	for round := range 10 {
		gone := fmt.Sprintf("s%02d_0", round)
		want = slices.DeleteFunc(want, func(s string) bool { return s == gone })
		lines = append(lines, []string{"remove", gone, "--config", file})
		added := fmt.Sprintf("t%02d", round)
		want = append(want, added)
		lines = append(lines, []string{"add", added, "--config", file, "--url", "https://example.com/" + added})
	}
	runAll(t, env, lines)
	slices.Sort(want)
	if got := serverNames(t, file); !slices.Equal(got, want) {
		t.Errorf("after adds and removes at once: missing %v, extra %v", missing(want, got), missing(got, want))
	}
}

// missing returns what want has and got lacks.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}
