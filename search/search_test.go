package search

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"create_issue", []string{"creat", "issu"}},
		{"github__search_repositories", []string{"github", "search", "repositori"}},
		{"browser-take-screenshot", []string{"browser", "take", "screenshot"}},
		{"azure.storage.blobs", []string{"azur", "storag", "blob"}},
		{"getHTTPServerStatus", []string{"get", "http", "server", "statu"}},
		{"HTTPServer", []string{"http", "server"}},
		{"listIssues2FA", []string{"list", "issu", "2", "fa"}},
		{"v2Beta", []string{"v", "2", "beta"}},
		{"The address of the repos", []string{"address", "repo"}},
		{"connected connecting connections", []string{"connect", "connect", "connect"}},
		{"ÉtéÇa naïve", []string{"été", "ça", "naïve"}},
		{"发票 PDF", []string{"发", "票", "发票", "pdf"}},
		{"要一份发票", []string{"要", "一", "份", "发", "票", "要一", "一份", "份发", "发票"}},
		{"退", []string{"退"}},
		{"的", nil}, // too common alone
		{"abc日本def", []string{"abc", "日", "本", "日本", "def"}},
		{"カレンダー", []string{"カ", "レ", "ン", "ダ", "ー", "カレ", "レン", "ンダ", "ダー"}},
		{"🚀 deploy 🔥", []string{"deploi"}},
		{"a.*+?^$[](){}|\\", nil},
		{"user007说", []string{"user", "007", "说"}},
		{"\xff\xfe broken utf8", []string{"broken", "utf", "8"}},
		// A possessive or contraction's s is no word; an s that begins one is.
		{"someone's slack profile", []string{"someon", "slack", "profil"}},
		{"the customer’s plan", []string{"custom", "plan"}},
		{"WHAT'S ON", nil},
		{"repo's", []string{"repo"}},
		{"the repo's-name", []string{"repo", "name"}},
		{"users' repos", []string{"user", "repo"}},
		{"'s3' bucket", []string{"s", "3", "bucket"}},
		{"repo's3 repo'sx", []string{"repo", "s", "3", "repo", "sx"}},
		{"o'brien", []string{"o", "brien"}},
		{"repo's说", []string{"repo", "s", "说"}},
		{"repo's. s3", []string{"repo", "s", "3"}},
	}
	for _, tt := range tests {
		if got := Tokens(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	long := strings.Repeat("word ", 10000)
	if got := len(Tokens(long)); got != 10000 {
		t.Errorf("Tokens(10000 words) gave %d tokens", got)
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		in      string
		want    Query
		wantErr bool
	}{
		{"create issue", Query{Terms: []string{"creat", "issu"}}, false},
		{"+github create", Query{Terms: []string{"github", "creat"}, Required: []string{"github"}}, false},
		{"server:slack post", Query{Terms: []string{"post"}, Server: "slack"}, false},
		{"give the money back", Query{Terms: []string{"give", "monei", "back", "refund"}}, false},
		{"select:a__b, c", Query{Select: []string{"a__b", "c"}}, false},
		{"SELECT:x", Query{Select: []string{"x"}}, false},
		{"select:", Query{}, true},
		{"group:github", Query{Group: "github"}, false},
		{"Group: triage ", Query{Group: "triage"}, false},
		{"group:", Query{}, true},
		{"group:a b", Query{}, true},
		{"group:a,b", Query{}, true},
		{"select: , ,", Query{}, true},
		{"", Query{}, true},
		{"   ", Query{}, true},
		{"the of and", Query{}, true},
		{"+", Query{}, true},
		{"🚀", Query{}, true},
	}
	for _, tt := range tests {
		got, err := ParseQuery(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseQuery(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		got.raws, got.text = nil, ""
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseQuery(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestEditDistanceOne(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"issue", "issue", false},
		{"isue", "issue", true},
		{"issue", "isue", true},
		{"issie", "issue", true},
		{"isseu", "issue", true},
		{"iusse", "issue", false},
		{"pull", "push", false},
		{"a", "", true},
		{"", "", false},
		{"abc", "abcde", false},
	}
	for _, tt := range tests {
		if got := editDistanceOne(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistanceOne(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSearchBasics(t *testing.T) {
	ix := NewIndex([]Doc{
		{Name: "gh__create_issue", Tool: "create_issue", Server: "gh", Description: "Create a new issue in a GitHub repository"},
		{Name: "gh__list_issues", Tool: "list_issues", Server: "gh", Description: "List issues in a GitHub repository"},
		{Name: "jira__create_issue", Tool: "create_issue", Server: "jira", Description: "Create a Jira issue"},
		{Name: "fs__read_file", Tool: "read_file", Server: "fs", Description: "Read a file", Params: []Param{{"path", "Path of the file"}}},
		{Name: "gh__create_issue", Tool: "dup", Server: "gh", Description: "ignored duplicate"},
	})
	if ix.Len() != 4 {
		t.Fatalf("Len = %d, want 4 (duplicate name ignored)", ix.Len())
	}
	search := func(q string, n int) []string {
		pq, err := ParseQuery(q)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", q, err)
		}
		hits, _ := ix.Search(pq, n)
		var names []string
		for _, h := range hits {
			names = append(names, h.Name)
		}
		return names
	}
	tests := []struct {
		q       string
		n       int
		want    []string
		ordered bool // whether the order of want matters
	}{
		{"create issue", 2, []string{"gh__create_issue", "jira__create_issue"}, false},
		{"create issue +jira", 5, []string{"jira__create_issue"}, true},
		{"crete isue", 2, []string{"gh__create_issue", "jira__create_issue"}, false}, // typos
		{"issues", 5, []string{"gh__create_issue", "gh__list_issues", "jira__create_issue"}, false},
		{"list issue", 1, []string{"gh__list_issues"}, true},
		{"read files", 1, []string{"fs__read_file"}, true}, // plural
		{"path", 1, []string{"fs__read_file"}, true},       // parameter name
		{"nothing matches zzzz", 5, nil, true},
		{"select:create_issue", 5, []string{"gh__create_issue", "jira__create_issue"}, true},
		{"select:fs__read_file,gh__list_issues", 5, []string{"fs__read_file", "gh__list_issues"}, true},
		{"select:fs__read_file,gh__list_issues", 1, []string{"fs__read_file"}, true},
		{"server:jira create issue", 5, []string{"jira__create_issue"}, true},
		{"server:JIRA issue", 5, []string{"jira__create_issue"}, true},
		{"server:nope issue", 5, nil, true},
		{"make a new bug", 2, []string{"gh__create_issue", "jira__create_issue"}, false}, // synonyms
	}
	for _, tt := range tests {
		got := search(tt.q, tt.n)
		if !tt.ordered {
			slices.Sort(got)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Search(%q, %d) = %q, want %q", tt.q, tt.n, got, tt.want)
		}
	}
	_, unknown := ix.Search(Query{Select: []string{"nope", "fs__read_file"}}, 5)
	if !reflect.DeepEqual(unknown, []string{"nope"}) {
		t.Errorf("unknown = %q, want [nope]", unknown)
	}
}

// catalogDocs reads the public catalogs in ../bench/catalogs, one server per file.
func catalogDocs(tb testing.TB) []Doc {
	tb.Helper()
	files, _ := filepath.Glob("../bench/catalogs/*.json")
	if len(files) == 0 {
		tb.Fatal("no catalogs at ../bench/catalogs")
	}
	var docs []Doc
	for _, f := range files {
		server := strings.TrimSuffix(filepath.Base(f), ".json")
		if server == "azure-all" {
			continue // an alternative view of azure
		}
		docs = append(docs, readCatalog(tb, f, server)...)
	}
	return docs
}

func readCatalog(tb testing.TB, file, server string) []Doc {
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		tb.Fatalf("%s: %v", file, err)
	}
	var docs []Doc
	for _, t := range list.Tools {
		docs = append(docs, Doc{Name: server + "__" + t.Name, Tool: t.Name, Server: server,
			Description: t.Description, Params: ParamsFromSchema(t.InputSchema)})
	}
	return docs
}

// TestGoldenRankings pins the top five for representative queries over all public catalogs.
// Run with -update to accept a deliberate ranking change, and review the diff.
func TestGoldenRankings(t *testing.T) {
	ix := NewIndex(catalogDocs(t))
	queries := []string{
		"create issue",
		"open a pull request",
		"read file",
		"take a screenshot of the page",
		"send a message to a channel",
		"list kubernetes pods",
		"refund a payment",
		"search the web",
		"+github search code",
		"remember this fact",
		"query database collection",
		"calendar events next week",
		"crete isue",
		"server:slack send message",
		"azure key vault secret",
		"把发票再发一次",
		"select:github__create_issue,read_file,nope",
	}
	var b strings.Builder
	for _, q := range queries {
		pq, err := ParseQuery(q)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", q, err)
		}
		hits, unknown := ix.Search(pq, 5)
		fmt.Fprintf(&b, "%s\n", q)
		for _, h := range hits {
			fmt.Fprintf(&b, "  %-50s %.3f\n", h.Name, h.Score)
		}
		for _, u := range unknown {
			fmt.Fprintf(&b, "  unknown %s\n", u)
		}
	}
	golden := filepath.Join("testdata", "rankings.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./search -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("rankings changed; run go test ./search -update and review the diff\ngot:\n%s", b.String())
	}
}

// FuzzSearch feeds arbitrary queries through parsing and ranking, which must never panic and
// must keep their promises: at most the limit, best first.
func FuzzSearch(f *testing.F) {
	for _, seed := range []string{"create issue", "+github code", "select:a,b", "server:x y", "发票 PDF",
		"HTTPServer", "\xff\xfe", "é\u0301", "a.*+?^$[](){}|\\", strings.Repeat("issue ", 300), "", "ÉTÉÇA"} {
		f.Add(seed, 5)
	}
	ix := NewIndex([]Doc{
		{Name: "gh__create_issue", Tool: "create_issue", Server: "gh", Description: "Create a new issue. 新建问题", Params: []Param{{"title", "Title"}}},
		{Name: "fs__read_file", Tool: "read_file", Server: "fs", Description: "Read a file"},
		{Name: "x__getHTTPStatus", Tool: "getHTTPStatus", Server: "x", Description: "获取状态"},
	})
	f.Fuzz(func(t *testing.T, query string, limit int) {
		limit = limit % 30
		_ = Tokens(query)
		q, err := ParseQuery(query)
		if err != nil {
			return
		}
		hits, _ := ix.Search(q, limit)
		if limit > 0 && len(hits) > limit {
			t.Fatalf("Search(%q, %d) returned %d hits", query, limit, len(hits))
		}
		for i := 1; i < len(hits); i++ {
			if better(hits[i], hits[i-1]) {
				t.Fatalf("Search(%q) out of order: %v", query, hits)
			}
		}
	})
}
