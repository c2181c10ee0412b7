package search

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

// TestGlossCacheReplaces fills the cache of merged Chinese words and holds it to its
// policy: a word is kept the second time it is searched for while there is room; when the
// cache is full, only a word asked for more often than the least used one kept replaces
// it; a word that did not fit is not merged again while it cannot; and every glossAge
// searches, each count is halved, so that a stale word gives way.
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
	reset := func(limit, age int) {
		c.m, c.held, c.asked, c.searches, c.merges = nil, 0, nil, 0, 0
		c.limit, c.age = limit, age
	}

	// Their sizes, with room for all.
	reset(math.MaxInt, math.MaxInt)
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

	reset(size["a"]+max(size["b"], size["c"]), math.MaxInt)
	search("a", "a", "b", "b", "a") // a kept with 3 uses, b with 2
	if kept("a") == nil || kept("b") == nil || kept("a").uses != 3 || kept("b").uses != 2 {
		t.Fatalf("a and b: %+v, %+v", kept("a"), kept("b"))
	}
	search("c", "c") // asked for twice, as often as b was: the cache keeps b
	if kept("c") != nil || kept("b") == nil || c.merges != 2 {
		t.Fatalf("after c twice: c %+v, b %+v, %d merges", kept("c"), kept("b"), c.merges)
	}
	search("c") // a third time: c replaces b
	if kept("c") == nil || kept("b") != nil || kept("a").uses != 3 || kept("c").uses != 3 {
		t.Fatalf("after c three times: a %+v, b %+v, c %+v", kept("a"), kept("b"), kept("c"))
	}
	if c.held != size["a"]+size["c"] || c.held > c.limit {
		t.Errorf("the cache holds %d bytes, want %d, limit %d", c.held, size["a"]+size["c"], c.limit)
	}
	search("b") // asked once since it was forgotten: not merged
	if kept("b") != nil || c.merges != 3 {
		t.Errorf("b after one search: %+v, %d merges", kept("b"), c.merges)
	}

	// A word larger than the cache is merged once, found too large, and then not merged.
	reset(size["a"]-1, math.MaxInt)
	search("a", "a", "a", "a", "a")
	if len(c.m) != 0 || c.merges != 1 {
		t.Errorf("a larger than the cache: %d kept, %d merges, want 0 and 1", len(c.m), c.merges)
	}

	// A word that did not fit, once merged, is not merged again while the room it needs
	// cannot be made: here the least used word kept is smaller than it.
	names := []string{"a", "b", "c"}
	slices.SortFunc(names, func(x, y string) int { return size[x] - size[y] })
	small, mid, big := names[0], names[1], names[2]
	if size[small] == size[big] {
		t.Fatalf("sizes %v: no word larger than another", size)
	}
	reset(size[small]+size[mid], math.MaxInt)
	search(mid, mid, mid, small, small)
	kept(small).uses = 1
	search(big, big) // may replace small, whose room it takes to be enough: merged, too large
	if kept(big) != nil || kept(small) == nil || c.merges != 3 {
		t.Fatalf("%s twice: %+v kept, %s %+v, %d merges, want 3", big, kept(big), small, kept(small), c.merges)
	}
	search(big) // a third time: mid, used three times, still may not go
	if c.merges != 3 {
		t.Errorf("%s merged again (%d merges) while it cannot be kept", big, c.merges)
	}
	search(big) // a fourth: both may go, and do
	if kept(big) == nil || kept(small) != nil || kept(mid) != nil || c.merges != 4 {
		t.Errorf("%s four times: kept %v, %s %v, %s %v, %d merges", big, kept(big) != nil, small, kept(small) != nil, mid, kept(mid) != nil, c.merges)
	}

	// The counts of words not kept halve too, and a word asked for no more is forgotten.
	reset(0, 4)
	search("c", "c", "c", "a") // the fourth search halves c's 3
	if a := c.asked[key["c"]]; a == nil || a.n != 1 {
		t.Fatalf("c after its counts halved: %+v, want 1", a)
	}
	search("a", "a", "a", "a")
	if a := c.asked[key["c"]]; a != nil {
		t.Errorf("c still counted after two halvings: %+v", a)
	}

	// A stale word asked for a thousand times gives way as the counts halve.
	for _, age := range []int{math.MaxInt, 4} {
		reset(max(size["a"], size["b"]), age)
		search("a", "a")
		kept("a").uses = 1000
		for i := 0; i < 60 && kept("b") == nil; i++ {
			search("b")
		}
		if got, want := kept("b") != nil, age == 4; got != want {
			t.Errorf("counts halved every %d searches: b kept %v after 60 searches, want %v", age, got, want)
		}
	}
}

// TestMakeRoom holds makeRoom to forgetting the least used words first, only those used
// less often than the word asked for, and nothing when that is not enough.
func TestMakeRoom(t *testing.T) {
	fill := func() *glossCache {
		c := &glossCache{limit: 300, m: map[string]*glossEntry{
			"k1": {uses: 1, size: 100}, "k2": {uses: 2, size: 100}, "k5": {uses: 5, size: 100},
		}, held: 300}
		return c
	}
	tests := []struct {
		size  int
		asked uint32
		ok    bool
		left  []string
	}{
		{0, 1, true, []string{"k1", "k2", "k5"}},
		{50, 2, true, []string{"k2", "k5"}},
		{150, 3, true, []string{"k5"}},
		{50, 9, true, []string{"k2", "k5"}},         // the least used first
		{250, 3, false, []string{"k1", "k2", "k5"}}, // k5 is used more often
		{300, 9, true, nil},
		{301, 9, false, []string{"k1", "k2", "k5"}},
		{50, 1, false, []string{"k1", "k2", "k5"}}, // none used less often
	}
	for _, tt := range tests {
		for _, forget := range []bool{false, true} {
			c := fill()
			if ok := c.makeRoom(tt.size, tt.asked, forget); ok != tt.ok {
				t.Errorf("makeRoom(%d, %d, %v) = %v, want %v", tt.size, tt.asked, forget, ok, tt.ok)
			}
			left := tt.left
			if !forget {
				left = []string{"k1", "k2", "k5"}
			}
			var got []string
			held := 0
			for k, e := range c.m {
				got = append(got, k)
				held += e.size
			}
			slices.Sort(got)
			if !slices.Equal(got, left) || held != c.held {
				t.Errorf("makeRoom(%d, %d, %v) left %v holding %d (counted %d), want %v", tt.size, tt.asked, forget, got, held, c.held, left)
			}
		}
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
