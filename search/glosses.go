package search

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"sync"
)

// glossMin is how many postings a Chinese word's English must have, over all its
// expansions, for its shares to be merged and kept (see glossShares): each search then adds
// one share to each doc instead of a value of each expansion. 开 (open, start, create,
// view…) matches 68,000 postings among 50,000 tools, and its merged shares 34,000 docs.
const glossMin = 2048

// glossBytes is how much memory the merged words may take per tool of the index: the
// index itself takes 1.2 KiB a tool at 50,000 tools.
const glossBytes = 384

// glossAge is how many searches for heavy words pass between two halvings of every
// word's count (see glossCache).
const glossAge = 1024

// glossCache keeps the merged shares of Chinese words whose English matches many docs, by
// their expansions: words that mean the same (新建, 创建: create, new) share an entry.
//
// A word is merged the second time it is searched for: merging costs more than scoring its
// expansions once (see BenchmarkSearchChinese), and a word used once would pay for nothing.
// When the cache is full, a word is merged only if it has been asked for more often than
// the words it would replace, least used first. Every glossAge searches for heavy words,
// kept or not, each word's count is halved, so that words no longer asked for give way and
// a word asked for often gets in. A word whose merged shares did not fit is not merged again
// until the room it needed can be made.
type glossCache struct {
	// min, limit and age are glossMin, glossBytes a tool and glossAge but in tests, which
	// change them.
	min, limit, age int
	mu              sync.Mutex // guards the rest
	m               map[string]*glossEntry
	held            int // the bytes of m's entries (see glossEntry.size)
	// asked counts the searches for each word not kept, and remembers the size a word
	// needed if it did not fit. It holds fewer than 2*age words: each search adds one to the
	// sum of the counts, each halving halves it, and a word with a count of 0 is forgotten.
	asked    map[string]*askedWord
	searches int // for heavy words since the counts were last halved
	merges   int // words merged, for tests
}

// glossEntry is one kept word.
type glossEntry struct {
	m    *merged
	size int    // its bytes: the key, the shares and runs, the map entry's
	uses uint32 // searches for it, halved every glossAge searches
}

// askedWord is one word searched for and not kept.
type askedWord struct {
	n    uint32 // searches for it, halved as uses are
	size int    // the bytes it needed when it did not fit, or 0
}

// glossShares returns each doc's share of a Chinese word through its English, merged as
// mergeShares merges an index term's, if its expansions have glossMin postings or more and
// the cache has it or takes it (see glossCache); and nil otherwise, for the search to score
// its expansions. A search that fuses rankings searches twice (see Fuse), so there the
// second search merges a heavy word.
func (ix *Index) glossShares(sc *scratch, exps []weighted) *merged {
	c := &ix.glosses
	if len(exps) < 2 {
		return nil
	}
	n := 0
	for _, e := range exps {
		n += len(ix.terms[e.term].postings)
	}
	if n < c.min {
		return nil
	}
	key := glossKey(exps)
	c.mu.Lock()
	c.tick()
	if e := c.m[string(key)]; e != nil {
		e.uses++
		c.mu.Unlock()
		return e.m
	}
	a := c.asked[string(key)]
	if a == nil {
		if c.asked == nil {
			c.asked = map[string]*askedWord{}
		}
		a = &askedWord{}
		c.asked[string(key)] = a
	}
	a.n++
	asked := a.n
	// Before merging, whether it may fit: at the size it needed before, if it did not.
	ok := asked >= 2 && c.makeRoom(max(a.size, entrySize(len(key), 0, 0)), asked, false)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	m := ix.merge(sc, exps, ix.chinese)
	e := &glossEntry{m: m, size: entrySize(len(key), len(m.docs), cap(m.runs)), uses: asked}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merges++
	if old := c.m[string(key)]; old != nil { // merged meanwhile by another search
		return old.m
	}
	a = c.asked[string(key)] // the counts may have been halved meanwhile
	if a != nil {
		e.uses = a.n
	}
	if !c.makeRoom(e.size, e.uses, true) {
		if a != nil {
			a.size = e.size
		}
		return m // for this search only
	}
	if c.m == nil {
		c.m = map[string]*glossEntry{}
	}
	c.m[string(key)] = e
	c.held += e.size
	delete(c.asked, string(key))
	return m
}

// tick counts a search for a heavy word, and every age searches halves every count.
func (c *glossCache) tick() {
	if c.searches++; c.searches < c.age {
		return
	}
	c.searches = 0
	for _, e := range c.m {
		e.uses /= 2
	}
	for k, a := range c.asked {
		if a.n /= 2; a.n == 0 {
			delete(c.asked, k)
		}
	}
}

// glossKey returns the key of a word with expansions exps: each index term, with its
// length before it, and its weight.
func glossKey(exps []weighted) []byte {
	key := make([]byte, 0, 16*len(exps))
	for _, e := range exps {
		key = binary.AppendUvarint(key, uint64(len(e.term)))
		key = binary.LittleEndian.AppendUint64(append(key, e.term...), math.Float64bits(e.w))
	}
	return key
}

// entrySize returns the bytes an entry takes with a key of k bytes, d shares and r runs.
func entrySize(k, d, r int) int {
	const overhead = 160 // the entry, the merged struct, the map's slot
	return k + 12*d + 16*r + overhead
}

// makeRoom reports whether size more bytes fit once words kept that were used less often
// than asked are forgotten, least used first; and if forget, forgets them. It forgets
// nothing if size cannot fit.
func (c *glossCache) makeRoom(size int, asked uint32, forget bool) bool {
	if c.held+size <= c.limit {
		return true
	}
	type candidate struct {
		key  string
		uses uint32
		size int
	}
	var less []candidate
	for k, e := range c.m {
		if e.uses < asked {
			less = append(less, candidate{k, e.uses, e.size})
		}
	}
	slices.SortFunc(less, func(a, b candidate) int { return cmp.Compare(a.uses, b.uses) })
	free, i := 0, 0
	for ; c.held-free+size > c.limit; i++ {
		if i == len(less) {
			return false
		}
		free += less[i].size
	}
	if forget {
		for _, cd := range less[:i] {
			delete(c.m, cd.key)
		}
		c.held -= free
	}
	return true
}
