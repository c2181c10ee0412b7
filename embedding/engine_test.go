package embedding

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsift/toolsift/internal/embedtest"
	"github.com/toolsift/toolsift/search"
)

func testDocs() []search.Doc {
	return []search.Doc{
		{Name: "gh__create_issue", Tool: "create_issue", Server: "gh", Description: "Create a new issue in a repository.",
			Params: []search.Param{{Name: "title"}, {Name: "body"}}},
		{Name: "gh__list_issues", Tool: "list_issues", Server: "gh", Description: "List the issues of a repository."},
		{Name: "gh__search_code", Tool: "search_code", Server: "gh", Description: "Search code across repositories."},
		{Name: "chat__send_message", Tool: "send_message", Server: "chat", Description: "Send a message to a channel."},
		{Name: "fs__read_file", Tool: "read_file", Server: "fs", Description: "Read the contents of a file."},
		{Name: "web__take_screenshot", Tool: "take_screenshot", Server: "web", Description: "Take a screenshot of the page."},
	}
}

// lockedBuffer is a log destination that tests read while the engine writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start returns an engine on the fake API, its log, and a ranker of docs once their
// vectors are in.
func start(t *testing.T, api *embedtest.Server, opts Options, docs []search.Doc) (*Engine, *lockedBuffer, *Hybrid) {
	t.Helper()
	logs := &lockedBuffer{}
	opts.URL, opts.Model = api.Base(), "fake"
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if opts.Timeout == 0 {
		opts.Timeout = 300 * time.Millisecond
	}
	e := New(opts)
	t.Cleanup(func() { e.Close() })
	e.Track(docs)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Wait(ctx); err != nil {
		t.Fatalf("tool vectors: %v\n%s", err, logs)
	}
	return e, logs, e.Hybrid(search.NewIndex(docs))
}

func query(t *testing.T, s string) search.Query {
	t.Helper()
	q, err := search.ParseQuery(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func hitNames(hits []search.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Name)
	}
	return out
}

// TestFindsByMeaning: a request that shares no word with its tool finds it with embeddings,
// and not without.
func TestFindsByMeaning(t *testing.T) {
	api := embedtest.New(t)
	_, _, h := start(t, api, Options{}, testDocs())
	ix := search.NewIndex(testDocs())
	for _, tt := range []struct{ query, want string }{
		{"lodge a complaint", "gh__create_issue"},
		{"a picture of the browser", "web__take_screenshot"},
		{"skim the paper", "fs__read_file"},
		{"tell the team", "chat__send_message"},
	} {
		q := query(t, tt.query)
		if words, _ := ix.Search(q, 5); slices.Contains(hitNames(words), tt.want) {
			t.Fatalf("%q finds %s by words alone (%q): not a test of meaning", tt.query, tt.want, hitNames(words))
		}
		hits, _ := h.Search(q, 5)
		if len(hits) == 0 || hits[0].Name != tt.want {
			t.Errorf("hybrid %q = %q, want %s first", tt.query, hitNames(hits), tt.want)
		}
	}
	// The query forms keep their meaning: server: and +required filter the meaning too, and
	// select: is by name.
	if hits, _ := h.Search(query(t, "server:chat lodge a complaint"), 5); slices.Contains(hitNames(hits), "gh__create_issue") {
		t.Errorf("server:chat found %q", hitNames(hits))
	}
	if hits, _ := h.Search(query(t, "+message lodge a complaint"), 5); !reflect.DeepEqual(hitNames(hits), []string{"chat__send_message"}) {
		t.Errorf("+message = %q, want only the tool with the word", hitNames(hits))
	}
	if hits, _ := h.Search(query(t, "select:fs__read_file"), 5); !reflect.DeepEqual(hitNames(hits), []string{"fs__read_file"}) {
		t.Errorf("select: = %q", hitNames(hits))
	}
}

// TestQueryFailuresRankByWords: whatever goes wrong with the query's vector, a search gives
// exactly the ranking by words, within a bounded wait, and the next one does not even ask.
func TestQueryFailuresRankByWords(t *testing.T) {
	const timeout = 300 * time.Millisecond
	// "lodge a complaint message" ranks differently by meaning, so that a fallback shows.
	queries := []string{"lodge a complaint message", "search code", "take a screenshot"}
	modes := map[string]embedtest.Mode{
		"slow past the timeout": embedtest.Slow, "500": embedtest.Status500, "bad JSON": embedtest.BadJSON,
		"wrong count": embedtest.WrongCount, "wrong dimension": embedtest.WrongDim, "mixed dimensions": embedtest.MixedDims,
		"NaN": embedtest.NaN, "overflow": embedtest.Overflow, "empty vector": embedtest.Empty, "zeros": embedtest.Zeros,
		"index out of range": embedtest.BadIndex, "connection refused": -1,
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			api := embedtest.New(t)
			e, logs, h := start(t, api, Options{Timeout: timeout}, testDocs())
			ix := search.NewIndex(testDocs())
			first := query(t, queries[0])
			if hybrid, _ := h.Search(first, 5); reflect.DeepEqual(hybrid, must(ix.Search(first, 5))) {
				t.Fatalf("%q ranks the same with embeddings: not a test of the fallback", queries[0])
			}
			if mode < 0 {
				api.Close()
			} else {
				api.SetMode(mode)
			}
			before, _ := api.Requests()
			for i, s := range queries {
				q := query(t, s)
				start := time.Now()
				got, unknown := h.Search(q, 5)
				took := time.Since(start)
				want, wantUnknown := ix.Search(q, 5)
				if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(unknown, wantUnknown) {
					t.Errorf("search %q = %v, want the ranking by words %v", s, got, want)
				}
				if took > timeout+2*time.Second {
					t.Errorf("search %q took %v, with a timeout of %v", s, took, timeout)
				}
				if n, _ := api.Requests(); i > 0 && mode >= 0 && n != before+1 {
					t.Errorf("after a failure, search %d asked the API again (%d requests, want %d)", i+1, n, before+1)
				}
			}
			n, err := e.QueryFailures()
			if n != len(queries) || err == nil {
				t.Errorf("QueryFailures = %d, %v; want %d and the reason", n, err, len(queries))
			}
			if got := strings.Count(logs.String(), "query vectors failing"); got != 1 {
				t.Errorf("%d log lines about the failure, want 1 (rate-limited):\n%s", got, logs)
			}
		})
	}
}

func must(hits []search.Hit, _ []string) []search.Hit { return hits }

// TestQueriesRecover: after its rest, a search asks again, and ranks by meaning again.
func TestQueriesRecover(t *testing.T) {
	api := embedtest.New(t)
	e, logs, h := start(t, api, Options{}, testDocs())
	api.SetMode(embedtest.Status500)
	h.Search(query(t, "lodge a complaint"), 5)
	api.SetMode(embedtest.OK)
	e.queries.mu.Lock()
	e.queries.until = time.Now() // the rest is over
	e.queries.mu.Unlock()
	if hits, _ := h.Search(query(t, "lodge a complaint"), 5); len(hits) == 0 || hits[0].Name != "gh__create_issue" {
		t.Errorf("after recovery = %q", hitNames(hits))
	}
	if !strings.Contains(logs.String(), "query vectors back") {
		t.Errorf("no log line about the recovery:\n%s", logs)
	}
}

// TestAlwaysAsk: a command that measures asks for every query's vector, failure or not.
func TestAlwaysAsk(t *testing.T) {
	api := embedtest.New(t)
	e, _, h := start(t, api, Options{AlwaysAsk: true}, testDocs())
	api.SetMode(embedtest.Status500)
	before, _ := api.Requests()
	for range 3 {
		h.Search(query(t, "lodge a complaint"), 5)
	}
	if n, _ := api.Requests(); n != before+3 {
		t.Errorf("%d requests for 3 searches, want 3", n-before)
	}
	if n, err := e.QueryFailures(); n != 3 || err == nil {
		t.Errorf("QueryFailures = %d, %v", n, err)
	}
}

// TestCallerCancelIsNoFailure: a search whose caller went away ranks by words, and does not
// count against the API.
func TestCallerCancelIsNoFailure(t *testing.T) {
	api := embedtest.New(t)
	e, _, h := start(t, api, Options{}, testDocs())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.SearchContext(ctx, query(t, "lodge a complaint"), 5)
	if n, _ := e.QueryFailures(); n != 0 {
		t.Errorf("QueryFailures = %d after a cancelled search, want 0", n)
	}
}

// TestToolVectorFailures: while the API fails, tools have no vectors, searches rank by
// words without asking it, Wait says why, and the worker retries until it works.
func TestToolVectorFailures(t *testing.T) {
	api := embedtest.New(t)
	api.SetMode(embedtest.Status500)
	logs := &lockedBuffer{}
	e := New(Options{URL: api.Base(), Model: "fake", Logger: slog.New(slog.NewTextHandler(logs, nil)), retry: 20 * time.Millisecond})
	defer e.Close()
	e.Track(testDocs())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Wait(ctx); err == nil || !strings.Contains(err.Error(), "6 of 6 tools have no vector") || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("Wait = %v, want how many and why", err)
	}
	ix := search.NewIndex(testDocs())
	h := e.Hybrid(ix)
	before, _ := api.Requests()
	q := query(t, "lodge a complaint message")
	if got, want := must(h.Search(q, 5)), must(ix.Search(q, 5)); !reflect.DeepEqual(got, want) {
		t.Errorf("search with no tool vectors = %v, want the words' %v", got, want)
	}
	if n, inputs := api.Requests(); n > before && slices.Contains(inputs, q.Prose()) {
		t.Errorf("a search asked for its query's vector with no tool vectors to compare")
	}
	api.SetMode(embedtest.OK)
	if err := e.Wait(ctx); err != nil {
		// Wait returns at a failure: wait again for the retries that work.
		time.Sleep(100 * time.Millisecond)
		if err := e.Wait(ctx); err != nil {
			t.Fatalf("after the API came back: %v", err)
		}
	}
	if hits, _ := h.Search(query(t, "lodge a complaint"), 5); len(hits) == 0 || hits[0].Name != "gh__create_issue" {
		t.Errorf("after the API came back = %q", hitNames(hits))
	}
	if got := strings.Count(logs.String(), "tool vectors not computed"); got != 1 {
		t.Errorf("%d log lines about the failure, want 1 (rate-limited):\n%s", got, logs)
	}
}

// TestRefusedTextHoldsBackNothing: a text the API refuses (too long for it) sinks below the
// others and fails alone; every other tool gets its vector.
func TestRefusedTextHoldsBackNothing(t *testing.T) {
	api := embedtest.New(t)
	api.Refuse("poison")
	docs := testDocs()
	for i := range 10 {
		docs = append(docs, search.Doc{Name: "x" + string(rune('a'+i)), Tool: "tool", Server: "x", Description: strings.Repeat("padding ", i)})
	}
	docs[3].Description += " poison"
	e := New(Options{URL: api.Base(), Model: "fake", BatchSize: 4, retry: time.Millisecond})
	defer e.Close()
	e.Track(docs)
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		n := len(e.vectors)
		e.mu.Unlock()
		if n == len(docs)-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tools have vectors, want all but the refused one", n, len(docs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Wait(ctx); err == nil || !strings.Contains(err.Error(), "1 of 16 tools have no vector") {
		t.Errorf("Wait = %v, want the one refused", err)
	}
}

// TestVectorsCachedOnDisk: vectors are computed once per tool text and model: a restart
// computes none, a changed tool text gets a new one, and another model its own.
func TestVectorsCachedOnDisk(t *testing.T) {
	api := embedtest.New(t)
	dir := t.TempDir()
	docs := testDocs()
	e, _, _ := start(t, api, Options{CacheDir: dir, BatchSize: 4}, docs)
	e.Close()
	n, inputs := api.Requests()
	if n != 2 || len(inputs) != len(docs) {
		t.Fatalf("first run: %d requests of %d inputs, want 2 of %d", n, len(inputs), len(docs))
	}

	// A restart: all from disk, and the ranking by meaning works.
	_, _, h := start(t, api, Options{CacheDir: dir}, docs)
	if n2, _ := api.Requests(); n2 != n {
		t.Errorf("restart made %d requests for tool vectors, want none", n2-n)
	}
	if hits, _ := h.Search(query(t, "lodge a complaint"), 1); len(hits) != 1 || hits[0].Name != "gh__create_issue" {
		t.Errorf("restart: search = %q", hitNames(hits))
	}
	n, inputs = api.Requests()

	// One tool's description changes: one new vector.
	changed := slices.Clone(docs)
	changed[4].Description = "Read a file, whole."
	start(t, api, Options{CacheDir: dir}, changed)
	n2, inputs2 := api.Requests()
	if n2 != n+1 || !reflect.DeepEqual(inputs2[len(inputs):], []string{Text(changed[4])}) {
		t.Errorf("changed tool: %d requests of %q, want 1 of its new text", n2-n, inputs2[len(inputs):])
	}

	// A damaged file is computed again, and replaced.
	k := keyOf(Text(docs[0]))
	path := cache{dir: filepath.Dir(newCache(dir, api.Base(), "fake").path(k))}.path(k)
	if err := os.WriteFile(path, []byte("TSV1garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, _ = api.Requests()
	start(t, api, Options{CacheDir: dir}, docs)
	if n2, _ := api.Requests(); n2 != n+1 {
		t.Errorf("a damaged vector file: %d requests, want 1", n2-n)
	}
	if data, _ := os.ReadFile(path); len(data) < 20 {
		t.Errorf("the damaged file was not replaced: %q", data)
	}

	// Another model has vectors of its own.
	e2 := New(Options{URL: api.Base(), Model: "other", CacheDir: dir})
	defer e2.Close()
	e2.Track(docs)
	if err := e2.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, inputs := api.Requests(); len(inputs) != len(inputs2)+1+len(docs) {
		t.Errorf("another model computed %d vectors, want %d", len(inputs)-len(inputs2)-1, len(docs))
	}
	dirs, _ := os.ReadDir(filepath.Join(dir, "embeddings"))
	if len(dirs) != 2 {
		t.Errorf("cache directories %v, want one per model", dirs)
	}
}

// TestTrackReplaces: a new catalog drops the old tools' vectors from memory and computes
// the new ones; the old tools no longer rank by meaning.
func TestTrackReplaces(t *testing.T) {
	api := embedtest.New(t)
	e, _, _ := start(t, api, Options{}, testDocs())
	docs := testDocs()[3:]
	e.Track(docs)
	if err := e.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	n := len(e.vectors)
	e.mu.Unlock()
	if n != len(docs) {
		t.Errorf("%d vectors in memory, want %d", n, len(docs))
	}
}

func TestAPIKey(t *testing.T) {
	api := embedtest.New(t)
	start(t, api, Options{APIKey: "sk-test"}, testDocs()[:1])
	start(t, api, Options{}, testDocs()[:1])
	if got := api.Authorization(); !reflect.DeepEqual(got, []string{"Bearer sk-test", ""}) {
		t.Errorf("Authorization headers = %q", got)
	}
}

// TestClose: Close is idempotent, stops a request in flight at once, and leaves Track and
// searches harmless.
func TestClose(t *testing.T) {
	api := embedtest.New(t)
	api.SetMode(embedtest.Slow)
	e := New(Options{URL: api.Base(), Model: "fake"})
	e.Track(testDocs())
	time.Sleep(50 * time.Millisecond) // the worker is waiting for its answer
	start := time.Now()
	e.Close()
	e.Close()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close took %v with a request in flight", took)
	}
	e.Track(testDocs())
	h := e.Hybrid(search.NewIndex(testDocs()))
	if hits, _ := h.Search(query(t, "search code"), 1); len(hits) != 1 {
		t.Errorf("search after Close = %v", hits)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := e.Wait(ctx); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Wait after Close = %v", err)
	}
}
