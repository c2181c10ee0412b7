package finder

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// source is a Source whose catalog a test sets; every server has started.
type source struct {
	cat atomic.Pointer[upstream.Catalog]
}

func newSource(tools []upstream.Tool) *source {
	s := &source{}
	s.cat.Store(upstream.NewCatalog(tools))
	return s
}

func (s *source) Catalog() *upstream.Catalog           { return s.cat.Load() }
func (s *source) Statuses() []upstream.Status          { return nil }
func (s *source) WaitStarted(context.Context) []string { return nil }

func tools(n int) []upstream.Tool {
	var out []upstream.Tool
	for i := range n {
		name := fmt.Sprintf("tool_%03d", i)
		out = append(out, upstream.Tool{Server: "s", Name: name, Exposed: "s__" + name, Description: "Does thing " + name + "."})
	}
	return out
}

// TestFindUsesTheBuiltIndex changes the catalog under a Finder: a search at once uses the
// index it has, of the old catalog, and the new index follows without any search waiting
// for it.
func TestFindUsesTheBuiltIndex(t *testing.T) {
	src := newSource(tools(200))
	f := New(src, Options{IndexDelay: -1})
	t.Cleanup(f.Close)
	old := f.index(context.Background())
	if old == nil || old.cat != src.Catalog() {
		t.Fatalf("first index = %v, want one of the catalog", old)
	}
	changed := upstream.NewCatalog(append(tools(200), upstream.Tool{Server: "new", Name: "frobnicate", Exposed: "new__frobnicate", Description: "Frobnicate the widgets."}))
	src.cat.Store(changed)
	if got := f.index(context.Background()); got != old {
		t.Fatalf("a search after the change got a new index at once: the build was waited for")
	}
	q, _ := search.ParseQuery("frobnicate widgets")
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := f.Find(context.Background(), Request{Query: q, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Catalog == changed {
			if !slices.Equal(res.Names(), []string{"new__frobnicate"}) {
				t.Errorf("the new index finds %v", res.Names())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new catalog's index was never built")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGroup: group:NAME finds every tool of a configured group, or of a server, in catalog
// order, within the bound; an unknown name lists the known ones.
func TestGroup(t *testing.T) {
	src := newSource(append(tools(3), upstream.Tool{Server: "gh", Name: "a", Exposed: "gh__a"}, upstream.Tool{Server: "gh", Name: "b", Exposed: "gh__b", AlwaysLoad: true}))
	f := New(src, Options{IndexDelay: -1, Groups: map[string][]string{"pair": {"s__tool_00[01]"}}})
	t.Cleanup(f.Close)
	find := func(name string, max int) ([]string, error) {
		q, err := search.ParseQuery("group:" + name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.Find(context.Background(), Request{Query: q, Limit: 5, MaxGroup: max})
		return res.Names(), err
	}
	for _, tt := range []struct {
		name string
		max  int
		want []string
		err  string
	}{
		{"pair", 0, []string{"s__tool_000", "s__tool_001"}, ""},
		{"GH", 0, []string{"gh__a", "gh__b"}, ""},
		{"gh", 1, []string{"gh__a", "gh__b"}, ""}, // the always-load one does not count
		{"s", 2, nil, "group:s has 3 tools to unlock, more than a session keeps unlocked (2"},
		{"nope", 0, nil, `no server or group is named "nope"; known: pair`},
	} {
		got, err := find(tt.name, tt.max)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("group:%s = %v, want error %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("group:%s = %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

// TestChoose: an unsure ranking is reordered by the Chooser's answer; a clear one, an
// answer naming none, and a Chooser that fails leave the words' order.
func TestChoose(t *testing.T) {
	src := newSource([]upstream.Tool{
		{Server: "s", Name: "list_files", Exposed: "s__list_files", Description: "List files."},
		{Server: "s", Name: "list_users", Exposed: "s__list_users", Description: "List users."},
		{Server: "s", Name: "send_message", Exposed: "s__send_message", Description: "Send a chat message to a channel."},
	})
	f := New(src, Options{IndexDelay: -1})
	t.Cleanup(f.Close)
	words := func(query string) []string {
		q, _ := search.ParseQuery(query)
		res, _ := f.Find(context.Background(), Request{Query: q, Limit: 2})
		return res.Names()
	}
	for _, tt := range []struct {
		query, answer string
		fail          bool
		asked         bool
		reversed      bool
	}{
		{"list", "2", false, true, true},
		{"list", "0", false, true, false},
		{"list", "", true, true, false},
		{"send message to channel", "2", false, false, false},
	} {
		q, _ := search.ParseQuery(tt.query)
		asked := false
		res, err := f.Find(context.Background(), Request{Query: q, Text: tt.query, Limit: 2,
			Choose: func(_ context.Context, system, prompt string, _ int) (string, error) {
				asked = true
				if !strings.Contains(prompt, "Request: "+tt.query) || !strings.Contains(system, "numbers of the tools") {
					t.Errorf("prompt %q", prompt)
				}
				if tt.fail {
					return "", fmt.Errorf("no model")
				}
				return tt.answer, nil
			}})
		want := words(tt.query)
		if tt.reversed {
			want = []string{want[1], want[0]}
		}
		if err != nil || asked != tt.asked || !slices.Equal(res.Names(), want) {
			t.Errorf("%q answered %q: asked %v, names %v; want %v, %v", tt.query, tt.answer, asked, res.Names(), tt.asked, want)
		}
	}
}

func TestChoices(t *testing.T) {
	for _, tc := range []struct {
		answer string
		n      int
		want   []int
	}{
		{"2", 3, []int{1}},
		{"3,1", 3, []int{2, 0}},
		{" 1 , 1, 2 ", 3, []int{0, 1}},
		{"0", 3, nil},
		{"-1", 3, nil},
		{"-2, 3", 3, []int{2}},
		{"1-2", 3, []int{0}},
		{"4", 3, nil},
		{"none", 3, nil},
		{"", 3, nil},
		{"99999999999999999999", 3, nil},
		{strings.Repeat("1,", 1000), 3, []int{0}},
	} {
		if got := choices(tc.answer, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("choices(%.20q, %d) = %v, want %v", tc.answer, tc.n, got, tc.want)
		}
	}
}

// TestAdmits: what Admits does not admit is never found, and the tools it admits fill the
// limit even when they rank below many that it does not (deeper than the first ranking
// looks); select: of a tool not admitted is Unknown.
func TestAdmits(t *testing.T) {
	var ts []upstream.Tool
	for i := range 200 {
		// The hidden ones match the query better: the word twice.
		name, desc := fmt.Sprintf("hidden_%03d", i), "Export the ledger export."
		if i >= 190 {
			name, desc = fmt.Sprintf("open_%03d", i), "Export data."
		}
		ts = append(ts, upstream.Tool{Server: "s", Name: name, Exposed: "s__" + name, Description: desc})
	}
	f := New(newSource(ts), Options{IndexDelay: -1})
	t.Cleanup(f.Close)
	admits := func(tl *upstream.Tool) bool { return strings.HasPrefix(tl.Name, "open_") }
	for _, tt := range []struct {
		query string
		limit int
		want  int
	}{{"export ledger", 5, 5}, {"export", 10, 10}, {"export", 0, 10}, {"nothing matches this", 5, 0}} {
		q, _ := search.ParseQuery(tt.query)
		res, err := f.Find(context.Background(), Request{Query: q, Limit: tt.limit, Admits: admits})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if !admits(&h.Tool) {
				t.Errorf("%q found %s, which is not admitted", tt.query, h.Tool.Exposed)
			}
		}
		if len(res.Hits) != tt.want {
			t.Errorf("%q limit %d: %d hits, want %d: %v", tt.query, tt.limit, len(res.Hits), tt.want, res.Names())
		}
	}
	q, _ := search.ParseQuery("select:s__hidden_001,s__open_195")
	res, _ := f.Find(context.Background(), Request{Query: q, Limit: 5, Admits: admits})
	if !slices.Equal(res.Names(), []string{"s__open_195"}) || !slices.Contains(res.Unknown, "s__hidden_001") {
		t.Errorf("select: found %v, unknown %v", res.Names(), res.Unknown)
	}
}
