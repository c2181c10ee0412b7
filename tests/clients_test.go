package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The real MCP clients the client tests run (client_*_test.go), pinned in package.json. The
// tests assert how these versions treat MCP tool lists, so another version fails loudly
// instead of passing or failing for reasons nobody checked.
var pinnedClients = map[string]struct{ path, version string }{
	"claude":   {"node_modules/.bin/claude", "2.1.328"},
	"codex":    {"node_modules/.bin/codex", "0.171.0"},
	"gemini":   {"node_modules/.bin/gemini", "0.61.0"},
	"opencode": {"node_modules/opencode-linux-x64/bin/opencode", "1.18.33"},
	"copilot":  {"node_modules/.bin/copilot", "1.0.102"},
}

// clientBin returns the absolute path of a pinned client, failing (not skipping) when it is
// missing or is another version. env is the environment to run `--version` in: some clients
// write to their home even then. The npm launchers need their native optional packages;
// without them they fail here, with their own message, rather than mid-scenario.
func clientBin(t *testing.T, name string, env []string) string {
	t.Helper()
	pin := pinnedClients[name]
	p, err := filepath.Abs(pin.path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is missing: run `npm ci --prefix tests` (with optional dependencies)", p)
	}
	cmd := exec.Command(p, "--version")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s\nrun `npm ci --prefix tests` (with optional dependencies)", p, err, out)
	}
	if !strings.Contains(string(out), pin.version) {
		t.Fatalf("%s is %q, want %s: run `npm ci --prefix tests`", p, strings.TrimSpace(string(out)), pin.version)
	}
	return p
}

// warmToolsift writes a toolsift configuration with the fixture as its only upstream, fx,
// and caches fx's catalog in a directory of its own, as a first run would. It returns the
// configuration and that cache directory. The toolsift a client starts must be given the
// cache (see toolsiftEnv) to find the catalog there: a warm start is what the client tests
// assert on, down to the list_changed it must not send.
func warmToolsift(t *testing.T) (cfg, cache string) {
	t.Helper()
	env := isolatedEnv(t)
	cfg = config(t, fmt.Sprintf("mcpServers:\n  fx:\n    command: %q\n", fixtureBin))
	warmCache(t, env, bin, cfg, "select:fx__echo")
	return cfg, envValue(env, "XDG_CACHE_HOME")
}

// toolsiftArgs are the arguments a client starts toolsift (bin) with: the configuration cfg,
// and a debug log in logPath, which the fake models and the checks read.
func toolsiftArgs(cfg, logPath string) []string {
	return []string{"--config", cfg, "--log-level", "debug", "--log-file", logPath}
}

// toolsiftEnv is what toolsift needs in the environment a client starts it with. Clients
// start their MCP servers with an environment of their own (under their own HOME, or
// redacted), which names no cache: cache is the warm one. GORACE spares the race-enabled
// toolsift its second's sleep on exit.
func toolsiftEnv(cache string) map[string]string {
	return map[string]string{"XDG_CACHE_HOME": cache, "GORACE": "atexit_sleep_ms=0"}
}

// writeJSON writes v, indented, to path, making its directory.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// envValue returns the value exec would give key in env: the last one.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// clientTimeout bounds one run of a client; a scripted conversation takes seconds.
const clientTimeout = 120 * time.Second

// clientRun is what one run of a real client left behind.
type clientRun struct {
	name           string // the client's command, for messages
	stdout, stderr string
	err            error    // how the client exited; one the timeout killed says so
	log            []string // toolsift's log lines, complete: all the client started has ended
}

// runClient runs cmd, a real client with toolsift as its MCP server logging to logPath, and
// returns once the client and everything it started have ended, so that toolsift's log is
// complete. It sets cmd's process attributes, Stdout and Stderr; stdin stays as cmd has it.
// A test that fails logs, at its end, how the client ended, what it printed, the requests
// the fake model received (requests, called then) and toolsift's log.
func runClient(t *testing.T, cmd *exec.Cmd, logPath string, requests func() string) clientRun {
	t.Helper()
	run := clientRun{name: filepath.Base(cmd.Path)}
	// The client spawns toolsift, which spawns the fixture: a timeout must take them all
	// down, and the test must tell when all of them are gone, so they get a process group of
	// their own.
	ownGroup(cmd)
	// toolsift may hold the client's stdout or stderr open for a while after the client exits.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	start := time.Now()
	if run.err = cmd.Start(); run.err == nil {
		pgid := cmd.Process.Pid
		var killed atomic.Bool
		timer := time.AfterFunc(clientTimeout, func() {
			killed.Store(true)
			killGroup(pgid)
		})
		run.err = cmd.Wait()
		timer.Stop()
		t.Logf("%s took %v", run.name, time.Since(start).Round(time.Millisecond))
		if killed.Load() {
			run.err = fmt.Errorf("killed after %v: %w", clientTimeout, run.err)
		}
		awaitGroup(t, run.name, pgid)
	}
	run.stdout, run.stderr = stdout.String(), stderr.String()
	run.log = readToolsiftLog(t, logPath)

	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%[1]s exit: %[2]v\n%[1]s stdout:\n%[3]s\n%[1]s stderr:\n%[4]s\nmodel requests:\n%[5]s\ntoolsift log:\n%[6]s",
				run.name, run.err, run.stdout, run.stderr, requests(), strings.Join(run.log, "\n"))
		}
	})
	return run
}

// awaitGroup gives the processes the client name left behind in process group pgid a few
// seconds to end (toolsift shutting down writes its last log lines then), then kills them
// and fails the test.
func awaitGroup(t *testing.T, name string, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(groupMembers(pgid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if left := groupMembers(pgid); len(left) > 0 {
		t.Errorf("processes %v (toolsift, its upstream?) still running 10s after %s exited; killing them", left, name)
		killGroup(pgid)
	}
}

// groupMembers returns the live (not zombie) processes of process group pgid: an orphan's
// zombie lingers until whoever adopted it reaps it, and is not a process left running.
// Without /proc it can only tell whether the group has any member, zombies included, and
// returns -pgid for them all.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		if groupAlive(pgid) {
			return []int{-pgid}
		}
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// After "(comm)": state ppid pgrp …
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// awaitUpstream holds the fake model's first answer until toolsift, logging to logPath, has
// connected its upstream, as a real model's seconds of latency would. toolsift on a cached
// catalog starts its upstream a second late; without the wait the fake model would search
// before it connects, and a list change toolsift sends on connecting (which the checks
// forbid) would race the search rather than come before it, as it would for a user.
func awaitUpstream(t *testing.T, logPath string) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(logPath)
		if strings.Contains(string(data), `msg="upstream connected"`) {
			// What toolsift does on connecting is logged right after; let it be.
			time.Sleep(250 * time.Millisecond)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("fake model: toolsift's upstream did not connect within 30s")
}

// readToolsiftLog reads toolsift's log lines. A missing log fails the test but reads as
// empty, so that the checks still say what toolsift never did.
func readToolsiftLog(t *testing.T, path string) []string {
	t.Helper()
	if path == "" {
		return nil // a toolsift started as a user's client starts it: its log is the client's
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Errorf("toolsift's log: %v (did the client start toolsift?)", err)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// checkToolsiftLog checks what toolsift logged of a client's session: it knew the client
// (client, the name in its clientInfo) and whether it holds a search for the client's
// re-list (holds); the first tool search ended as it should for such a client; nothing made
// the client re-list before that search; every response was written.
func checkToolsiftLog(t *testing.T, log []string, client string, holds bool) {
	t.Helper()
	var connected []string
	for _, l := range log {
		if logField(l, "msg") == "client connected" {
			connected = append(connected, l)
		}
	}
	if i := slices.IndexFunc(connected, func(l string) bool {
		return logField(l, "client") == client && logField(l, "holds") == strconv.FormatBool(holds)
	}); i < 0 {
		t.Errorf(`toolsift did not log "client connected" with client=%s holds=%v; it logged %q`, client, holds, connected)
	} else {
		t.Logf("toolsift knew the client: client=%s version=%s holds=%s", client,
			logField(connected[i], "client_version"), logField(connected[i], "holds"))
	}

	search := slices.IndexFunc(log, func(l string) bool { return logField(l, "msg") == "tool search" })
	if search < 0 {
		t.Fatalf("toolsift logged no tool search")
	}
	// The hold ends when the client has re-listed; one toolsift does not hold for (it would
	// not re-list while it waits) is answered at once.
	want := "relisted"
	if !holds {
		want = "skipped"
	}
	if hold := logField(log[search], "hold"); hold != want {
		t.Errorf("the tool search ended its hold with hold=%q, want %s: %s", hold, want, log[search])
	}
	t.Logf("tool_search took %s ms in toolsift, its hold (hold=%s) included",
		logField(log[search], "duration_ms"), logField(log[search], "hold"))

	// With a warm cache the tool list the client first read is already complete, and nothing
	// changes when the upstream connects: a list change before the first search only costs
	// the client a pointless re-list (and a real model's prompt cache a miss). The search's
	// own list_changed (reason=search, or "search (again)") is logged before the search's
	// line, which is written when the search ends.
	for _, l := range log[:search] {
		msg := logField(l, "msg")
		if strings.Contains(msg, "list_changed") && !strings.Contains(msg, "not sent") &&
			!strings.HasPrefix(logField(l, "reason"), "search") {
			t.Errorf("list_changed sent before the first tool search although the catalog was cached: %s", l)
		}
	}
	// A write to a server being stopped at exit is dropped quietly, not logged as an error.
	for _, l := range log {
		if strings.Contains(l, "Error writing response") {
			t.Errorf("toolsift failed to write a response: %s", l)
		}
	}
}

// logField returns the value of key in a slog text line, unquoted; "" if absent.
func logField(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+2:]
	if strings.HasPrefix(rest, `"`) {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			s, _ := strconv.Unquote(q)
			return s
		}
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

// logCount counts the log lines containing all of subs.
func logCount(log []string, subs ...string) int {
	n := 0
next:
	for _, line := range log {
		for _, sub := range subs {
			if !strings.Contains(line, sub) {
				continue next
			}
		}
		n++
	}
	return n
}
