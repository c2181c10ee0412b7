package stats

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func def(server, text string) Def { return Def{Server: server, Raw: []byte(text)} }

// A scripted session: what each search resolves to, and the day's counts.
func TestRecorderOutcomes(t *testing.T) {
	store, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	r := NewRecorder(store, RecorderOptions{Now: func() time.Time { now = now.Add(time.Second); return now }})
	all := []Def{def("github", `{"name":"github_create_issue","description":"Create a new issue"}`),
		def("jira", `{"name":"jira_create_ticket","description":"Create a Jira ticket"}`)}
	cat := &struct{}{}
	l := Listing{Catalog: cat, All: func() []Def { return all }, Listed: []Def{def("", `{"name":"tool_search"}`)}}
	jira := Tool{Exposed: "jira_create_ticket", Server: "jira", Name: "create_ticket"}
	// s1: a hit. s2: searched again, then called another tool. s3: nothing called.
	// s4: a call of a tool unknown resolves nothing; the session's end does.
	r.Opened("claude-code")
	r.Searched("s1", "claude-code", "create issue", []string{"github_create_issue"}, []byte("result one"), l)
	r.Calling("s1", "claude-code", Tool{Exposed: "github_create_issue", Server: "github", Name: "create_issue"}, l)
	r.Called("github", "ok")
	r.Searched("s2", "cursor", "open ticket", []string{"github_create_issue"}, []byte("r"), l)
	r.Searched("s2", "cursor", "file a bug", []string{"github_create_issue"}, []byte("r"), l)
	r.Calling("s2", "cursor", jira, l)
	r.Called("jira", "ok")
	r.Searched("s3", "cursor", "frobnicate", nil, []byte("r"), l)
	r.Ended("s3")
	r.Searched("s4", "cursor", "zzz", nil, []byte("r"), l)
	r.Calling("s4", "cursor", Tool{Exposed: "nope"}, l)
	r.Called("", "unknown")
	r.Close()
	r.Close() // idempotent

	rep, err := store.Report(now, 7)
	if err != nil {
		t.Fatal(err)
	}
	direct := int64(Count(string(all[0].Raw)) + Count(string(all[1].Raw)))
	listed := int64(Count(`{"name":"tool_search"}`))
	requests := int64(8)
	if rep.Today.Requests != int(requests) || rep.Today.Direct != requests*direct {
		t.Errorf("today: %d requests, %d direct tokens; want %d, %d", rep.Today.Requests, rep.Today.Direct, requests, requests*direct)
	}
	wantSent := requests*listed + int64(Count("result one")) + 4*int64(Count("r"))
	if rep.Today.Sent != wantSent {
		t.Errorf("sent %d tokens, want %d", rep.Today.Sent, wantSent)
	}
	if rep.Today.Searches != 5 || rep.Today.Hits != 1 || rep.Today.Misses != 4 || rep.Today.Sessions != 1 {
		t.Errorf("today: %+v; want 5 searches, 1 hit, 4 misses, 1 session", rep.Today.Tally)
	}
	if got := rep.Servers; len(got) != 2 || got[0].Calls["ok"]+got[1].Calls["ok"] != 2 {
		t.Errorf("servers: %+v", got)
	}
	sessions := map[string]SessionRow{}
	for _, row := range rep.Sessions {
		sessions[row.ID[strings.LastIndex(row.ID, "/")+1:]] = row
	}
	if s2 := sessions["s2"]; len(rep.Sessions) != 4 || s2.Client != "cursor" || s2.Searches != 2 || s2.Misses != 2 || s2.Requests != 3 || s2.Direct != 3*direct {
		t.Errorf("sessions: %+v; want 4, s2 of cursor with 2 searches, 2 misses, 3 requests", rep.Sessions)
	}
	if s1 := sessions["s1"]; s1.Hits != 1 || s1.Sent != 2*listed+int64(Count("result one")) {
		t.Errorf("session s1: %+v", s1)
	}
	byQuery := map[string]Search{}
	for _, m := range rep.Misses {
		byQuery[m.Query] = m
	}
	for _, want := range []Search{
		{Query: "open ticket", Outcome: Again, Used: "jira_create_ticket", UsedServer: "jira", UsedName: "create_ticket"},
		{Query: "file a bug", Outcome: Other, Used: "jira_create_ticket", UsedServer: "jira", UsedName: "create_ticket"},
		{Query: "frobnicate", Outcome: Nothing},
		{Query: "zzz", Outcome: Nothing},
	} {
		got := byQuery[want.Query]
		if got.Outcome != want.Outcome || got.Used != want.Used || got.UsedServer != want.UsedServer || got.UsedName != want.UsedName {
			t.Errorf("miss %q: %+v, want %+v", want.Query, got, want)
		}
	}
	if _, ok := byQuery["create issue"]; ok || len(rep.Misses) != 4 {
		t.Errorf("misses: %+v", rep.Misses)
	}
	if err := store.MarkFixed(byQuery["file a bug"].Key, []string{"bug"}); err != nil {
		t.Fatal(err)
	}
	if sr, _ := store.Search(byQuery["file a bug"].Key); len(sr.Fixed) != 1 {
		t.Errorf("fixed: %+v", sr)
	}
	empty, _ := Open(t.TempDir())
	for _, st := range []*Store{store, empty} {
		if _, err := st.Search("nope"); err == nil {
			t.Errorf("a search never made was found")
		}
		if err := st.MarkFixed("nope", []string{"x"}); err == nil {
			t.Errorf("a search never made was marked fixed")
		}
	}
}

// Searches past 30 days are deleted, and their days rolled up into their month.
func TestRollUp(t *testing.T) {
	store, _ := Open(t.TempDir())
	old := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	at := old
	r := NewRecorder(store, RecorderOptions{Now: func() time.Time { return at }})
	r.Searched("s", "c", "old query", nil, []byte("x"), Listing{})
	r.Flush()
	at = old.Add(Keep + 48*time.Hour)
	r.Searched("t", "c", "new query", nil, []byte("x"), Listing{})
	r.Close()
	list, err := store.Searches(old.Add(-time.Hour), 100)
	if err != nil || len(list) != 1 || list[0].Query != "new query" {
		t.Fatalf("searches after the roll-up: %+v, %v", list, err)
	}
	days, _ := store.Days("2026-10-01", "2026-10-01")
	if len(days) != 0 {
		t.Errorf("the old day is still a day: %v", days)
	}
	var month Day
	if err := store.view(func(tx *bboltTx) error { return readDay(tx, "2026-10", &month) }); err != nil {
		t.Fatal(err)
	}
	if month.Total().Searches != 1 {
		t.Errorf("month 2026-10: %+v, want the old day's search", month.Total())
	}
	if days, _ := store.Days("2026-10-01", "2026-10-01"); len(days) != 0 {
		t.Errorf("the old day's sessions are still kept: %+v", days)
	}
	if days, _ := store.Days(at.Format(time.DateOnly), at.Format(time.DateOnly)); len(days) != 1 || len(days[at.Format(time.DateOnly)].Sessions) != 1 {
		t.Errorf("the new day: %+v, want its session", days)
	}
}

// A call that starts resolves the session's open search, in the order calls start: the
// model's first call of two in parallel is the one that decides.
func TestParallelCalls(t *testing.T) {
	store, _ := Open(t.TempDir())
	r := NewRecorder(store, RecorderOptions{})
	r.Searched("s", "c", "create issue", []string{"github_create_issue"}, nil, Listing{})
	r.Calling("s", "c", Tool{Exposed: "github_create_issue", Server: "github"}, Listing{})
	r.Calling("s", "c", Tool{Exposed: "jira_post", Server: "jira"}, Listing{})
	r.Called("jira", "ok") // ends first
	r.Called("github", "ok")
	r.Close()
	rep, _ := store.Report(time.Now(), 1)
	if rep.Today.Hits != 1 || rep.Today.Misses != 0 {
		t.Errorf("today: %+v, want the search a hit", rep.Today.Tally)
	}
}

// The week's figures are a week's even when the report shows fewer days.
func TestReportWeek(t *testing.T) {
	store, _ := Open(t.TempDir())
	now := time.Now().UTC()
	at := now.AddDate(0, 0, -4)
	r := NewRecorder(store, RecorderOptions{Now: func() time.Time { return at }})
	r.Searched("s", "c", "q", nil, nil, Listing{})
	r.Close()
	for _, days := range []int{1, 3, 7, 30} {
		rep, err := store.Report(now, days)
		if err != nil || rep.Week.Searches != 1 || len(rep.Days) != days {
			t.Errorf("Report(%d days): week %+v, %d days, %v; want 1 search", days, rep.Week.Tally, len(rep.Days), err)
		}
	}
}

// A store that cannot be written keeps the counts for the next try, and says so once a
// minute, not at every try.
func TestStoreNotWritable(t *testing.T) {
	store, _ := Open(t.TempDir())
	if err := os.Mkdir(store.Path(), 0o700); err != nil { // a folder where the file goes
		t.Fatal(err)
	}
	var logs strings.Builder
	r := NewRecorder(store, RecorderOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r.Searched("s", "c", "kept", nil, nil, Listing{})
	for range 3 {
		r.Flush()
	}
	if n := strings.Count(logs.String(), "stats not written"); n != 1 {
		t.Errorf("%d warnings for 3 failed writes, want 1:\n%s", n, logs.String())
	}
	if err := os.Remove(store.Path()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if list, _ := store.Searches(time.Now().Add(-time.Hour), 10); len(list) != 1 || list[0].Query != "kept" {
		t.Errorf("after the store came back: %+v, want the search kept", list)
	}
}

// Two processes writing at once lose nothing: bbolt's file lock serializes their writes.
func TestTwoProcesses(t *testing.T) {
	if dir := os.Getenv("STATS_WRITER_DIR"); dir != "" {
		store, _ := Open(dir)
		r := NewRecorder(store, RecorderOptions{Every: time.Millisecond})
		n, _ := strconv.Atoi(os.Getenv("STATS_WRITER_N"))
		for i := range n {
			r.Searched(fmt.Sprint("s", i), "writer", "q", nil, []byte("x"), Listing{})
			if i%50 == 0 {
				r.Flush()
			}
		}
		r.Close()
		return
	}
	dir := t.TempDir()
	const n = 400
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestTwoProcesses$")
			cmd.Env = append(os.Environ(), "STATS_WRITER_DIR="+dir, fmt.Sprint("STATS_WRITER_N=", n))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("writer: %v\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	store, _ := Open(dir)
	rep, err := store.Report(time.Now(), 2) // the week: the run may cross midnight
	if err != nil {
		t.Fatal(err)
	}
	if rep.Week.Searches != 2*n || rep.Week.Misses != 2*n {
		t.Errorf("%d searches, %d misses counted; want %d of each", rep.Week.Searches, rep.Week.Misses, 2*n)
	}
	list, _ := store.Searches(time.Now().Add(-time.Hour), 10*n)
	if len(list) != 2*n {
		t.Errorf("%d searches kept, want %d", len(list), 2*n)
	}
}

func TestShort(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 812: "812", 3392: "3.4k", 351250: "351k", 1551822: "1.6M", -5: "-5"} {
		if got := Short(n); got != want {
			t.Errorf("Short(%d) = %q, want %q", n, got, want)
		}
	}
}

var testTime = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// A damaged store says what to do about it.
func TestDamagedStore(t *testing.T) {
	store, _ := Open(t.TempDir())
	if err := os.WriteFile(store.Path(), bytes.Repeat([]byte("not bbolt "), 2000), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Report(time.Now(), 7); err == nil || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("a damaged store: %v", err)
	}
}
