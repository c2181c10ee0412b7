package search

import (
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

// glossCache keeps the merged shares of Chinese words whose English matches many docs, by
// their expansions: words that mean the same (新建, 创建: create, new) share an entry.
//
// A word is merged the second time it is searched for: merging costs more than scoring its
// expansions once (see BenchmarkSearchChinese), and a word used once would pay for nothing.
// When the cache is full, a word is merged only if it has been asked for more often than
// the least used word kept, which it replaces; each replacement halves every kept word's
// count, so that words no longer asked for give way. A vocabulary larger than the cache
// therefore costs what scoring the expansions costs, not a merge on every return of a
// word forgotten at random.
type glossCache struct {
	// min is glossMin and limit glossBytes a tool but in tests, which change them.
	min, limit int
	mu         sync.Mutex // guards m, held and asked
	m          map[string]*glossEntry
	held       int // the bytes of m's entries (see glossEntry.size)
	// asked counts the searches for each word not kept, up to askedMax words.
	asked map[string]uint32
}

// glossEntry is one kept word.
type glossEntry struct {
	m    *merged
	size int    // its bytes: the key, the shares and runs, the map entry's
	uses uint32 // searches for it, halved by each replacement
}

// askedMax bounds glossCache.asked: past it, the counts start over.
const askedMax = 4096

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
	n, most := 0, 0
	for _, e := range exps {
		l := len(ix.terms[e.term].postings)
		n, most = n+l, max(most, l)
	}
	if n < c.min {
		return nil
	}
	key := glossKey(exps)
	c.mu.Lock()
	if e := c.m[string(key)]; e != nil {
		e.uses++
		c.mu.Unlock()
		return e.m
	}
	if c.asked == nil || len(c.asked) >= askedMax {
		c.asked = map[string]uint32{}
	}
	c.asked[string(key)]++
	asked := c.asked[string(key)]
	// Whether it may fit, at the least it can take, before merging it.
	ok := asked >= 2 && c.makeRoom(entrySize(len(key), most, 1), asked, false)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	m := ix.merge(sc, exps, ix.chinese)
	e := &glossEntry{m: m, size: entrySize(len(key), len(m.docs), cap(m.runs)), uses: asked}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[string(key)]; old != nil { // merged meanwhile by another search
		return old.m
	}
	if !c.makeRoom(e.size, asked, true) {
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

// makeRoom reports whether size more bytes fit once the least used words kept, each used
// less often than asked, are forgotten; and if forget, forgets them. It forgets nothing if
// size cannot fit.
func (c *glossCache) makeRoom(size int, asked uint32, forget bool) bool {
	if c.held+size <= c.limit {
		return true
	}
	if size > c.limit {
		return false
	}
	// Least used first: a search that gets here is rare, and the entries a few hundred.
	free := 0
	var gone []string
	for c.held-free+size > c.limit {
		least, k := uint32(math.MaxUint32), ""
		for key, e := range c.m {
			if e.uses < least && !slices.Contains(gone, key) {
				least, k = e.uses, key
			}
		}
		if k == "" || least >= asked {
			return false
		}
		gone = append(gone, k)
		free += c.m[k].size
	}
	if !forget {
		return true
	}
	for _, k := range gone {
		delete(c.m, k)
	}
	c.held -= free
	for _, e := range c.m {
		e.uses /= 2
	}
	return true
}
