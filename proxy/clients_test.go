package proxy

import (
	"cmp"
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/habit"
	"github.com/toolsift/toolsift/internal/mcptest"
)

// loggedProxy is the golden proxy with a short ListWait, logging into the returned buffer.
func loggedProxy(t *testing.T) (*Server, *mcptest.Buffer) {
	t.Helper()
	logs := &mcptest.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return newGoldenProxyWith(t, Options{Logger: log, ListWait: 300 * time.Millisecond}), logs
}

// holds returns the hold outcome of each tool search logged so far.
func holds(logs *mcptest.Buffer) []string {
	var out []string
	for line := range strings.Lines(logs.String()) {
		if !strings.Contains(line, `msg="tool search"`) {
			continue
		}
		_, rest, _ := strings.Cut(line, " hold=")
		out = append(out, strings.Fields(rest)[0])
	}
	return out
}

func searchArgs(query string) map[string]any {
	return map[string]any{"name": SearchTool, "arguments": map[string]any{"query": query, "max_results": 1}}
}

// TestHoldEndsWhenTheClientDoesNotRelist: a client that lets a hold run out without
// re-listing has shown that it does not re-list before reading a result; its later searches
// are answered at once, and their hint names call_tool alone.
func TestHoldEndsWhenTheClientDoesNotRelist(t *testing.T) {
	p, logs := loggedProxy(t)
	c := newTranscript(t, p)
	c.initializeAs("some-client")
	id := c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	c.expect("notifications/tools/list_changed") // sent again halfway through the hold
	c.expect(id)
	id = c.send("tools/call", searchArgs("create issue"))
	c.expectUnordered("notifications/tools/list_changed", id)
	if got := holds(logs); len(got) != 2 || got[0] != holdTimeout || got[1] != holdSkipped {
		t.Errorf("holds = %q, want [timeout skipped]", got)
	}
	result := string(c.sections[len(c.sections)-1].data)
	if strings.Contains(result, "join your tool list") || !strings.Contains(result, "call_tool") {
		t.Errorf("the hint for a client that does not re-list: %s", result)
	}
}

// TestHoldPerClient: Codex is never held; Gemini CLI, which applies a re-listed list in the
// background, is held a settle longer once its re-list is written; others until they re-list.
func TestHoldPerClient(t *testing.T) {
	for _, tc := range []struct {
		client string
		want   string
		settle time.Duration
	}{
		{"codex-mcp-client", holdSkipped, 0},
		{"gemini-cli-mcp-client", holdRelisted, habits["gemini-cli-mcp-client"].settle},
		{"claude-code", holdRelisted, 0},
		{"", holdRelisted, 0},
	} {
		t.Run(tc.client, func(t *testing.T) {
			p, logs := loggedProxy(t)
			c := newTranscript(t, p)
			c.initializeAs(tc.client)
			id := c.send("tools/call", searchArgs("send message"))
			if tc.want == holdSkipped {
				c.expectUnordered("notifications/tools/list_changed", id)
			} else {
				c.expect("notifications/tools/list_changed")
				c.roundTrip("tools/list", map[string]any{})
				listed := time.Now()
				c.expect(id)
				// A floor, not a speed claim: the result must not come before the settle.
				if waited := time.Since(listed); waited < tc.settle*8/10 {
					t.Errorf("result %v after the re-list, want at least %v", waited, tc.settle)
				}
			}
			if got := holds(logs); len(got) != 1 || got[0] != tc.want {
				t.Errorf("holds = %q, want [%s]", got, tc.want)
			}
			name := cmp.Or(tc.client, `""`) // as slog writes an empty value
			if !strings.Contains(logs.String(), `msg="client connected" session=stdio client=`+name+" ") {
				t.Errorf("the client is not logged:\n%s", logs)
			}
		})
	}
}

// TestOpencodeHoldsLonger: opencode may read nothing for seconds early in a session, so its
// hold outlasts ListWait (300 ms here): a re-list 400 ms late still counts.
func TestOpencodeHoldsLonger(t *testing.T) {
	p, logs := loggedProxy(t)
	c := newTranscript(t, p)
	c.initializeAs("opencode")
	id := c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	time.Sleep(400 * time.Millisecond)
	c.roundTrip("tools/list", map[string]any{})
	c.expect(id)
	if got := holds(logs); len(got) != 1 || got[0] != holdRelisted {
		t.Errorf("holds = %q, want [relisted]", got)
	}
}

// TestKnownClientKeepsHolding: a client whose habit is known keeps it through a hold that
// ran out (it was slow once); an unknown one would not be held again.
func TestKnownClientKeepsHolding(t *testing.T) {
	p, logs := loggedProxy(t)
	c := newTranscript(t, p)
	c.initializeAs("gemini-cli-mcp-client")
	id := c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	c.expect("notifications/tools/list_changed")
	c.expect(id)
	id = c.send("tools/call", searchArgs("create issue"))
	c.expect("notifications/tools/list_changed")
	c.roundTrip("tools/list", map[string]any{})
	c.expect(id)
	if got := holds(logs); len(got) != 2 || got[0] != holdTimeout || got[1] != holdRelisted {
		t.Errorf("holds = %q, want [timeout relisted]", got)
	}
}

// TestStructured checks which sessions get tool_search's matches twice, as structuredContent
// beside the text.
func TestStructured(t *testing.T) {
	for _, tt := range []struct {
		client, protocol string
		want             bool
	}{
		{"claude-code", "2025-11-25", false},
		{"codex-mcp-client", "2025-06-18", false},
		{"gemini-cli-mcp-client", "2025-11-25", false},
		{"opencode", "2025-11-25", false},
		{"some-agent", "2025-11-25", true},
		{"some-agent", "2025-06-18", true},
		{"some-agent", "2025-03-26", false}, // before structuredContent
		{"some-agent", "2024-11-05", false},
		{"Claude-Code", "2025-11-25", true}, // names are exact
		{"", "", true},                      // a request outside any session
	} {
		sess := &session{client: tt.client, protocol: tt.protocol}
		if got := sess.structured(); got != tt.want {
			t.Errorf("structured(%q, %q) = %v, want %v", tt.client, tt.protocol, got, tt.want)
		}
	}
}

// TestLearnedHabits: what a session shows of a client toolsift does not know is kept for
// its next session, in another process (a real habits file): a hold that ran out means no
// hold from the next session's first search; a re-list after it, that the client re-lists
// late; a client that starts re-listing at once is noticed, and held again.
func TestLearnedHabits(t *testing.T) {
	file := habit.Open(filepath.Join(t.TempDir(), "habits.json"), nil, nil)
	open := func() (*Server, *mcptest.Buffer) {
		logs := &mcptest.Buffer{}
		log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		return newGoldenProxyWith(t, Options{Logger: log, ListWait: 300 * time.Millisecond, Habits: file}), logs
	}
	learned := func(name string, want func(habit.Client) bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if c, ok := file.Lookup(habit.Key{Name: name, Version: "1"}); ok && want(c) {
				return
			}
			if time.Now().After(deadline) {
				c, ok := file.Lookup(habit.Key{Name: name, Version: "1"})
				t.Fatalf("%s: learned %+v %v", name, c, ok)
			}
		}
	}

	// First session: the hold runs out, then the client re-lists, late.
	p, logs := open()
	c := newTranscript(t, p)
	c.initializeAs("agent")
	id := c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	c.expect("notifications/tools/list_changed")
	c.expect(id)
	learned("agent", func(c habit.Client) bool { return !c.Relists })
	c.roundTrip("tools/list", map[string]any{})
	learned("agent", func(c habit.Client) bool { return !c.Relists && c.Late })
	if got := holds(logs); len(got) != 1 || got[0] != holdTimeout {
		t.Errorf("first session: holds = %q, want [timeout]", got)
	}

	// Next session, another process: no hold from the first search.
	p, logs = open()
	c = newTranscript(t, p)
	c.initializeAs("agent")
	id = c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	c.expect(id)
	c.roundTrip("tools/list", map[string]any{}) // late: says nothing new
	id = c.send("tools/call", searchArgs("create issue"))
	c.expect("notifications/tools/list_changed")
	c.expect(id)
	if got := holds(logs); len(got) != 2 || got[0] != holdSkipped || got[1] != holdSkipped {
		t.Errorf("next session: holds = %q, want [skipped skipped]", got)
	}

	// A client learned not to re-list starts re-listing at once (an update): one search
	// holds to see, and it is held from then on.
	if err := file.Learn(context.Background(), habit.Key{Name: "updated", Version: "1"}, false, false); err != nil {
		t.Fatal(err)
	}
	p, logs = open()
	c = newTranscript(t, p)
	c.initializeAs("updated")
	id = c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	c.expect(id)
	c.roundTrip("tools/list", map[string]any{})
	id = c.send("tools/call", searchArgs("create issue"))
	c.expect("notifications/tools/list_changed")
	c.roundTrip("tools/list", map[string]any{})
	c.expect(id)
	learned("updated", func(c habit.Client) bool { return c.Relists })
	if got := holds(logs); len(got) != 2 || got[0] != holdSkipped || got[1] != holdRelisted {
		t.Errorf("updated client: holds = %q, want [skipped relisted]", got)
	}

	// A client learned to re-list late, two days ago (one slow moment, say), that re-lists
	// right after a search is probed again, and held from then on.
	old := habit.Open(file.Path(), nil, func() time.Time { return time.Now().Add(-48 * time.Hour) })
	if err := old.Learn(context.Background(), habit.Key{Name: "slowpoke", Version: "1"}, false, true); err != nil {
		t.Fatal(err)
	}
	p, logs = open()
	c = newTranscript(t, p)
	c.initializeAs("slowpoke")
	id = c.send("tools/call", searchArgs("send message"))
	c.expect("notifications/tools/list_changed")
	c.expect(id)
	c.roundTrip("tools/list", map[string]any{})
	id = c.send("tools/call", searchArgs("create issue"))
	c.expect("notifications/tools/list_changed")
	c.roundTrip("tools/list", map[string]any{})
	c.expect(id)
	learned("slowpoke", func(c habit.Client) bool { return c.Relists && !c.Late })
	if got := holds(logs); len(got) != 2 || got[0] != holdSkipped || got[1] != holdRelisted {
		t.Errorf("slowpoke: holds = %q, want [skipped relisted]", got)
	}

	// A known client is recorded as known, for status, and keeps its habit.
	p, _ = open()
	newTranscript(t, p).initializeAs("cursor-vscode")
	p.Close() // waits for the record
	if i := slices.IndexFunc(file.All(), func(c habit.Client) bool { return c.Name == "cursor-vscode" }); i < 0 || !file.All()[i].Known || file.All()[i].Relists {
		t.Errorf("cursor-vscode recorded as %+v", file.All())
	}
}
