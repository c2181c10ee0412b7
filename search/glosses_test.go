package search

import (
	"math"
	"reflect"
	"testing"
)

// TestGlossCacheReplaces fills the cache of merged Chinese words and holds it to its
// policy: a word is kept the second time it is searched for while there is room; when the
// cache is full, only a word asked for more often than the least used one kept replaces it,
// and every word kept then counts half its uses.
func TestGlossCacheReplaces(t *testing.T) {
	loadCJK(t)
	ix := NewIndex(pooled(t, 10000))
	c := &ix.glosses
	words := map[string]string{"a": "抓", "b": "看", "c": "读取"} // 7,224, 6,757, 6,748 postings
	key := map[string]string{}
	queries := map[string]Query{}
	for name, w := range words {
		q, err := ParseQuery(w)
		if err != nil || len(q.glosses) != 1 || ix.inCatalog(w) {
			t.Fatalf("%s: %v, glosses %v", w, err, q.glosses)
		}
		queries[name] = q
		key[name] = string(glossKey(ix.glossExpansions(q.glosses[0])))
	}
	search := func(names ...string) {
		for _, n := range names {
			ix.Search(queries[n], 5)
		}
	}
	kept := func(name string) *glossEntry { return c.m[key[name]] }

	// Their sizes, with room for all.
	c.limit = math.MaxInt
	search("a", "b", "c")
	if len(c.m) != 0 {
		t.Fatalf("after one search each, %d words kept", len(c.m))
	}
	search("a", "b", "c")
	if len(c.m) != 3 {
		t.Fatalf("after two searches each, %d words kept, want 3", len(c.m))
	}
	size := map[string]int{}
	for name := range words {
		size[name] = kept(name).size
	}

	c.m, c.held, c.asked = nil, 0, nil
	c.limit = size["a"] + max(size["b"], size["c"])
	search("a", "a", "b", "b", "a") // a kept with 3 uses, b with 2
	if kept("a") == nil || kept("b") == nil || kept("a").uses != 3 || kept("b").uses != 2 {
		t.Fatalf("a and b: %+v, %+v", kept("a"), kept("b"))
	}
	search("c", "c") // asked for twice, as often as b was: the cache keeps b
	if kept("c") != nil || kept("b") == nil {
		t.Fatalf("after c twice: c %+v, b %+v", kept("c"), kept("b"))
	}
	search("c") // a third time: c replaces b
	if kept("c") == nil || kept("b") != nil {
		t.Fatalf("after c three times: c %+v, b %+v", kept("c"), kept("b"))
	}
	if kept("a").uses != 1 || kept("c").uses != 3 {
		t.Errorf("uses after the replacement: a %d, want 1 (3 halved); c %d, want 3", kept("a").uses, kept("c").uses)
	}
	if c.held != size["a"]+size["c"] || c.held > c.limit {
		t.Errorf("the cache holds %d bytes, want %d, limit %d", c.held, size["a"]+size["c"], c.limit)
	}
	// b starts over: asked once since it was forgotten, it is not merged.
	search("b")
	if kept("b") != nil {
		t.Errorf("b kept again after one search")
	}
}

// TestGlossMatchingNothing merges a Chinese word whose English only tools described in
// Chinese have, which the English of a Chinese word never matches: it must count for
// nothing, as scoring its expansions finds nothing, and not as a term no tool matched.
func TestGlossMatchingNothing(t *testing.T) {
	loadCJK(t)
	ix := NewIndex([]Doc{
		{Name: "files__list_files", Tool: "list_files", Server: "files", Description: "List the files in a folder."},
		{Name: "users__list_users", Tool: "list_users", Server: "users", Description: "List users."},
		{Name: "cd__ship", Tool: "ship", Server: "cd", Description: "部署服务: release and publish a build."},
	})
	q, err := ParseQuery("发布 list") // 发布: release, publish
	if err != nil || len(q.glosses) != 1 {
		t.Fatalf("%v, glosses %v", err, q.glosses)
	}
	c := &ix.glosses
	c.min = math.MaxInt
	want, _ := ix.Search(q, 5)
	c.min = 0
	for i := range 3 {
		if got, _ := ix.Search(q, 5); !reflect.DeepEqual(got, want) {
			t.Errorf("search %d: %v, want (expansions scored) %v", i+1, got, want)
		}
	}
	if len(c.m) != 1 {
		t.Errorf("%d words kept, want 1", len(c.m))
	}
}

// TestGenerationWraps ranks Chinese requests, whose English words are scored expansion by
// expansion over a small catalog, each with a scratch whose term count wraps as it starts:
// the docs marked under the same counts by the searches before must not read as marked.
func TestGenerationWraps(t *testing.T) {
	loadCJK(t)
	ix := NewIndex(catalogDocs(t))
	for _, q := range caseQueries(t, "../bench/zh.yaml") {
		want, _ := ix.Search(q, 5)
		sc := ix.getScratch()
		sc.gen = math.MaxUint32
		ix.putScratch(sc)
		if got, _ := ix.Search(q, 5); !reflect.DeepEqual(got, want) {
			t.Errorf("Search(%q) after the count wrapped = %v, want %v", q.text, got, want)
		}
		if sc.gen > 1000 {
			t.Fatalf("the search used another scratch")
		}
	}
}
