package proxy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// answer sends a request and returns its result, skipping the notifications before it.
func (c *transcript) answer(method string, params any) json.RawMessage {
	c.t.Helper()
	id := c.send(method, params)
	for {
		c.next()
		last := c.sections[len(c.sections)-1]
		if !c.is(last.name, id) {
			continue
		}
		var m struct {
			Result json.RawMessage `json:"result"`
		}
		// The recorded data is indented JSON with volatile values masked: still JSON.
		if err := json.Unmarshal(last.data, &m); err != nil {
			c.t.Fatal(err)
		}
		return m.Result
	}
}

// searchFor runs tool_search and returns its result, decoded from its text.
func (c *transcript) searchFor(query string, max int) (SearchResult, string) {
	c.t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	raw := c.answer("tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": query, "max_results": max}})
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatal(err)
	}
	if r.IsError {
		return SearchResult{}, r.Content[0].Text
	}
	var sr SearchResult
	if len(r.Content) != 1 || json.Unmarshal([]byte(r.Content[0].Text), &sr) != nil {
		c.t.Fatalf("tool_search result: %s", raw)
	}
	return sr, ""
}

// listed returns the names in the session's tools/list.
func (c *transcript) listed() []string {
	c.t.Helper()
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.answer("tools/list", map[string]any{}), &r); err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, tl := range r.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// codexSession opens a session that is never held, so that a test need not re-list.
func codexSession(t *testing.T, opts Options) *transcript {
	t.Helper()
	opts.ListWait = 20 * time.Second
	c := newTranscript(t, newGoldenProxyWith(t, opts))
	c.initializeAs("codex-mcp-client")
	return c
}

// TestUnlockedSetIsBounded: past maxUnlocked the least recently used tools fall out, with
// the result saying which; matching or calling a tool counts as using it; a tool that fell
// out is still callable, and calling it brings it back.
func TestUnlockedSetIsBounded(t *testing.T) {
	c := codexSession(t, Options{MaxUnlocked: 2})
	steps := []struct {
		query        string
		max          int
		call         string // instead of a search
		unlocked     []string
		dropped      []string
		list         []string // unlocked tools listed afterwards, in order
		matchesCount int
	}{
		{query: "issue", max: 2, unlocked: []string{"gh__create_issue", "gh__list_issues"}, list: []string{"gh__create_issue", "gh__list_issues"}, matchesCount: 2},
		// The lower-ranked match of the earlier search is the least recently used.
		{query: "send message", max: 1, unlocked: []string{"chat__send_message"}, dropped: []string{"gh__list_issues"}, list: []string{"gh__create_issue", "chat__send_message"}, matchesCount: 1},
		{call: "gh__create_issue", list: []string{"gh__create_issue", "chat__send_message"}},
		{query: "list channels", max: 1, unlocked: []string{"chat__list_channels"}, dropped: []string{"chat__send_message"}, list: []string{"gh__create_issue", "chat__list_channels"}, matchesCount: 1},
		// A dropped tool is still called, and comes back, in place of the least recently used.
		{call: "chat__send_message", list: []string{"chat__list_channels", "chat__send_message"}},
		// More matches than room: the best ones stay (list_channels was unlocked already).
		{query: "select:gh__list_issues,chat__list_channels,gh__create_issue", max: 3, unlocked: []string{"gh__list_issues"}, dropped: []string{"chat__send_message"}, list: []string{"chat__list_channels", "gh__list_issues"}, matchesCount: 3},
	}
	for i, st := range steps {
		if st.call != "" {
			raw := c.answer("tools/call", map[string]any{"name": st.call, "arguments": map[string]any{"x": "y"}})
			if strings.Contains(string(raw), `"isError": true`) {
				t.Fatalf("step %d: calling %s: %s", i, st.call, raw)
			}
		} else {
			sr, errText := c.searchFor(st.query, st.max)
			if errText != "" {
				t.Fatalf("step %d: %s", i, errText)
			}
			if len(sr.Matches) != st.matchesCount || !slices.Equal(sr.Unlocked, st.unlocked) || !slices.Equal(sr.Dropped, st.dropped) {
				t.Errorf("step %d: %q: %d matches, unlocked %q, dropped %q; want %d, %q, %q", i, st.query, len(sr.Matches), sr.Unlocked, sr.Dropped, st.matchesCount, st.unlocked, st.dropped)
			}
		}
		got := c.listed()
		want := append([]string{"gh__get_me", SearchTool, CallTool}, st.list...)
		if !slices.Equal(got, want) {
			t.Errorf("step %d: tools/list = %q, want %q", i, got, want)
		}
	}
}

// TestGroupUnlock: group:NAME unlocks every tool of a configured group, or of a server, at
// once; an unknown name or a group over maxUnlocked is an error saying what to do instead.
func TestGroupUnlock(t *testing.T) {
	groups := map[string][]string{"triage": {"gh__list_issues", "chat__*"}, "empty": {"nothing__*"}}
	for _, tc := range []struct {
		query   string
		max     int
		want    []string
		wantErr string
	}{
		{query: "group:chat", want: []string{"chat__send_message", "chat__list_channels"}},
		{query: "group:triage", want: []string{"gh__list_issues", "chat__send_message", "chat__list_channels"}},
		{query: "GROUP: triage", want: []string{"gh__list_issues", "chat__send_message", "chat__list_channels"}},
		// The always-load get_me is a match, and was never hidden; the denied delete_repo is
		// no tool at all.
		{query: "group:gh", want: []string{"gh__get_me", "gh__create_issue", "gh__list_issues"}},
		{query: "group:empty", want: []string{}},
		{query: "group:slack", wantErr: `no server or group is named "slack"; known: chat, empty, gh, triage`},
		{query: "group:triage", max: 2, wantErr: "group:triage has 3 tools to unlock, more than a session keeps unlocked (2, maxUnlocked"},
		// Two to unlock: the always-load get_me does not count.
		{query: "group:gh", max: 2, want: []string{"gh__get_me", "gh__create_issue", "gh__list_issues"}},
		{query: "group:CHAT", want: []string{"chat__send_message", "chat__list_channels"}},
		{query: "group:chat gh", wantErr: "group: takes one name"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			c := codexSession(t, Options{Groups: groups, MaxUnlocked: tc.max})
			sr, errText := c.searchFor(tc.query, 1)
			if tc.wantErr != "" {
				if !strings.Contains(errText, tc.wantErr) {
					t.Errorf("error %q, want %q", errText, tc.wantErr)
				}
				return
			}
			var names []string
			for _, m := range sr.Matches {
				names = append(names, m.Name)
			}
			if errText != "" || !slices.Equal(names, tc.want) && len(names)+len(tc.want) > 0 {
				t.Fatalf("matches %q (error %q), want %q", names, errText, tc.want)
			}
			listed := c.listed()
			for _, n := range tc.want {
				if !slices.Contains(listed, n) {
					t.Errorf("%s is not listed after %s: %q", n, tc.query, listed)
				}
			}
		})
	}
}

// TestListAllWhileItFits: with toolSearch: auto, a catalog that fits the budget is listed
// whole, with no meta-tools, and searches unlock nothing; one that does not is listed lazily.
func TestListAllWhileItFits(t *testing.T) {
	for _, tc := range []struct {
		budget int
		want   []string
	}{
		{0, []string{"gh__get_me", SearchTool, CallTool}},
		{10_000, []string{"gh__get_me", "gh__create_issue", "gh__list_issues", "chat__send_message", "chat__list_channels"}},
		{50, []string{"gh__get_me", SearchTool, CallTool}}, // five tools take more than 50 tokens
	} {
		c := codexSession(t, Options{ListAllUnder: tc.budget})
		if got := c.listed(); !slices.Equal(got, tc.want) {
			t.Errorf("budget %d: tools/list = %q, want %q", tc.budget, got, tc.want)
		}
		sr, _ := c.searchFor("send message", 1)
		if len(sr.Matches) != 1 || tc.budget == 10_000 && len(sr.Unlocked) != 0 {
			t.Errorf("budget %d: search = %+v", tc.budget, sr)
		}
	}
}
