package proxy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/finder"
	"github.com/toolsift/toolsift/search"
)

// sampler answers toolsift's sampling requests in a transcript session: with answer, or not
// at all when answer is "".
func (c *transcript) searchAnswering(query string, answer string) (SearchResult, int) {
	c.t.Helper()
	id := c.send("tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": query, "max_results": 2}})
	asked := 0
	for {
		c.next()
		last := c.sections[len(c.sections)-1]
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"result"`
		}
		if err := json.Unmarshal(last.data, &m); err != nil {
			c.t.Fatal(err)
		}
		switch {
		case m.Method == "sampling/createMessage":
			asked++
			if answer != "" {
				c.write("sampling answer", map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
					"role": "assistant", "model": "fake", "content": map[string]any{"type": "text", "text": answer},
				}})
			}
		case c.is(last.name, id):
			var sr SearchResult
			if len(m.Result.Content) != 1 || json.Unmarshal([]byte(m.Result.Content[0].Text), &sr) != nil {
				c.t.Fatalf("tool_search result: %s", last.data)
			}
			return sr, asked
		}
	}
}

// TestSamplingChoosesWhenWordsAreUnsure: with search.sampling on and a client that declared
// sampling, a search whose best scores are close asks the client's model, whose choice comes
// first; a clear search, a client without sampling, sampling off, an answer with no usable
// number, and no answer at all leave the words' order.
func TestSamplingChoosesWhenWordsAreUnsure(t *testing.T) {
	sampling := map[string]any{"sampling": map[string]any{}}
	for _, tc := range []struct {
		name      string
		on        bool
		caps      map[string]any
		query     string
		answer    string
		wantAsked int
		reversed  bool // the model's choice puts the words' second first
	}{
		{name: "asked", on: true, caps: sampling, query: "list", answer: "2", wantAsked: 1, reversed: true},
		{name: "asked, answer with words", on: true, caps: sampling, query: "list", answer: "Tool 2 fits, then 1.", wantAsked: 1, reversed: true},
		{name: "asked, none fits", on: true, caps: sampling, query: "list", answer: "0", wantAsked: 1},
		{name: "asked, garbage", on: true, caps: sampling, query: "list", answer: "the second one", wantAsked: 1},
		{name: "asked, out of range", on: true, caps: sampling, query: "list", answer: "9, -1", wantAsked: 1},
		{name: "no answer", on: true, caps: sampling, query: "list", answer: "", wantAsked: 1},
		{name: "clear winner", on: true, caps: sampling, query: "send message", answer: "2", wantAsked: 0},
		{name: "client without sampling", on: true, caps: map[string]any{}, query: "list", answer: "2", wantAsked: 0},
		{name: "sampling off", on: false, caps: sampling, query: "list", answer: "2", wantAsked: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newGoldenProxyWith(t, Options{Sampling: tc.on, SamplingTimeout: 300 * time.Millisecond, ListWait: 20 * time.Second})
			words, _ := search.ParseQuery(tc.query)
			ix := finder.Index(p.ups.Catalog())
			hits, _ := ix.Search(words, 2)
			c := newTranscript(t, p)
			c.initializeWith("codex-mcp-client", tc.caps) // never held, so no re-list needed
			sr, asked := c.searchAnswering(tc.query, tc.answer)
			var got []string
			for _, m := range sr.Matches {
				got = append(got, m.Name)
			}
			want := []string{hits[0].Name, hits[1].Name}
			if tc.reversed {
				want = []string{hits[1].Name, hits[0].Name}
			}
			if asked != tc.wantAsked || !slices.Equal(got, want) {
				t.Errorf("asked %d times, matches %q; want %d, %q", asked, got, tc.wantAsked, want)
			}
		})
	}
}

// TestSamplingWithNothingMatched: with no word matching, a small catalog is offered whole,
// and only the model's pick is a match.
func TestSamplingWithNothingMatched(t *testing.T) {
	p := newGoldenProxyWith(t, Options{Sampling: true, ListWait: 20 * time.Second})
	c := newTranscript(t, p)
	c.initializeWith("codex-mcp-client", map[string]any{"sampling": map[string]any{}})
	sr, asked := c.searchAnswering("frobnicate", "4")
	if asked != 1 || len(sr.Matches) != 1 {
		t.Fatalf("asked %d times, matches %+v; want one ask and one match", asked, sr.Matches)
	}
	if sr.Matches[0].Name != "chat__send_message" { // the catalog's fourth tool
		t.Errorf("match %s, want the fourth tool offered", sr.Matches[0].Name)
	}
	if sr2, asked := c.searchAnswering("frobnicate", "0"); asked != 1 || len(sr2.Matches) != 0 || !strings.HasPrefix(sr2.Hint, "No tool matched") {
		t.Errorf("answer 0: asked %d, result %+v; want no match and the no-match hint", asked, sr2)
	}
}
