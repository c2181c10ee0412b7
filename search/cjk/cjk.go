// Package cjk reads Chinese for the search package: it splits a run of Han characters into
// the words of a Chinese→English table and a glossary of software terms (longest match,
// corrected by word costs: see segmentRun), and gives each word a few English words, so that
// a request written in Chinese can find tools described in English.
//
// The table (cedict.txt.gz) is generated from CC-CEDICT by ./gen; the glossary
// (glossary.txt) is written by hand and overrides the table's everyday senses (镜像 is an
// image, not a mirror). Both are embedded, and read on the first call that meets a Han
// character: a process that never sees Chinese never pays for them.
package cjk

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

//go:generate go run ./gen -o cedict.txt.gz

//go:embed cedict.txt.gz
var cedictGz []byte

//go:embed glossary.txt
var glossaryText string

// Word is one word of a run of Han characters.
type Word struct {
	// Text is the word as written.
	Text string
	// English holds its English words, lower case, best first. It is empty for a function
	// word and for a character neither the glossary nor the table has.
	English []string
	// Function reports a function word (的, 一下, 帮我): it says nothing about a tool.
	Function bool
	// Glossary reports English from the glossary of software terms, not from the general
	// dictionary, whose first senses are a guess.
	Glossary bool
}

// Dict is the table and the glossary, read on first use. The zero Dict is ready; it is safe
// for concurrent use.
type Dict struct {
	once sync.Once
	err  error

	// Fixed once loaded.
	text string // the table's headword lines
	// heads finds a headword's line: an open-addressed hash table of 1 + the offsets of the
	// lines in text, each at the slot its headword's hash picks or the next free one (0 is
	// free). A binary search of the lines would take 17 probes, each a cache miss in a busy
	// process.
	heads  []uint32
	seed   maphash.Seed
	toSimp map[rune]rune
	toTrad map[rune][]rune
	gloss  map[string]glossEntry // the glossary, under every form of each word
	maxLen int                   // the longest headword, in characters
}

type glossEntry struct {
	english  []string
	function bool
	glossary bool // from the glossary, not the table
	numeral  bool // a function word that segments like a table word
	name     bool // from the table, and only a name
}

// std is the Dict that Segment uses.
var std Dict

// Segment splits the runs of Han characters in text into words, each with its English words;
// anything else in text is skipped. Text without a Han character returns nil at once.
func Segment(text string) []Word { return std.Segment(text) }

// Load reads the table and the glossary if they are not read yet, and reports whether they
// could be. Segment loads them itself; Load is for measuring that, and for tests.
func Load() error { return std.Load() }

// HasHan reports whether s has a Han character.
func HasHan(s string) bool {
	for _, r := range s {
		if r >= 0x2E80 && unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}

// Load reads d's table and glossary once; later calls return the first call's error.
func (d *Dict) Load() error {
	d.once.Do(func() { d.err = d.load() })
	return d.err
}

// Segment is the package's Segment over d. A table that cannot be read (a build gone wrong)
// leaves the glossary, and the error for Load to report.
func (d *Dict) Segment(text string) []Word {
	if !HasHan(text) {
		return nil
	}
	d.Load()
	var words []Word
	var run []rune
	seen := 0
	for _, r := range text {
		if r >= 0x2E80 && unicode.Is(unicode.Han, r) {
			if seen++; seen > maxRun {
				break
			}
			run = append(run, r)
		} else if len(run) > 0 {
			words = d.segmentRun(words, run)
			run = run[:0]
		}
	}
	return d.segmentRun(words, run)
}

// Costs of a word for segmentRun, which picks the cheapest split of a run. CC-CEDICT has no
// word frequencies, so plain longest match splits 发条消息 ("send a message") as 发条
// (clockwork) 消息, 里加个待办 as 里加 (Riga) 个待办; these costs make a split into glossary
// words (发 send, 条 a measure word) cheaper than one table word, but not a split into two
// content words (开发, develop, stays whole), and a name dearer than a word.
const (
	costFunction = 3  // a function word of the glossary
	costGlossary = 6  // any other word of the glossary
	costTable    = 10 // a word of the table, or a character no one knows
	costName     = 13 // a word of the table that is only a name
)

// maxRun caps the characters of a text that are segmented: requests are short, and a long
// text must not make a search slow.
const maxRun = 512

// segmentRun splits one run of Han characters into the words of least total cost (ties go to
// the longer word at the left), and appends them to words.
func (d *Dict) segmentRun(words []Word, run []rune) []Word {
	n := len(run)
	if n == 0 {
		return words
	}
	type step struct {
		cost, size int32
		e          glossEntry
	}
	best := make([]step, n+1)
	for i := 1; i <= n; i++ {
		best[i].cost = math.MaxInt32
	}
	// The run as written and converted to Simplified a character at a time, each with the
	// offset of each character, so that a word of it is a slice: a run of n characters has
	// up to n*maxLen words to look up, most of them no word at all.
	text, simp := []byte(string(run)), make([]byte, 0, len(run)*3)
	at, simpAt := make([]int32, n+1), make([]int32, n+1)
	ambiguous := make([]int32, n+1) // how many of the first i characters convert to more than one
	for i, r := range run {
		at[i+1] = at[i] + int32(utf8.RuneLen(r))
		ambiguous[i+1] = ambiguous[i]
		if sr, ok := d.toSimp[r]; ok {
			if sr == 0 {
				ambiguous[i+1]++
			} else {
				r = sr
			}
		}
		simp = utf8.AppendRune(simp, r)
		simpAt[i+1] = int32(len(simp))
	}
	for i := 0; i < n; i++ {
		for l := min(d.maxLen, n-i); l >= 1; l-- {
			w := unsafeString(text[at[i]:at[i+l]])
			s := ""
			if ambiguous[i+l] == ambiguous[i] {
				s = unsafeString(simp[simpAt[i]:simpAt[i+l]])
			}
			e, ok := d.lookupAs(w, s)
			if !ok && l == 2 && isNickname(run[i], run[i+1]) {
				e, ok = glossEntry{function: true, numeral: true}, true
			}
			if !ok && l > 1 {
				continue
			}
			c := int32(costTable)
			switch {
			case e.numeral:
			case e.function:
				c = costFunction
			case e.glossary:
				c = costGlossary
			case e.name:
				c = costName
			}
			if c += best[i].cost; c < best[i+l].cost {
				best[i+l] = step{cost: c, size: int32(l), e: e}
			}
		}
	}
	start := len(words)
	for j := n; j > 0; j -= int(best[j].size) {
		b := best[j]
		words = append(words, Word{Text: string(run[j-int(b.size) : j]), English: b.e.english, Function: b.e.function, Glossary: b.e.glossary})
	}
	slices.Reverse(words[start:])
	return words
}

// unsafeString is b as a string, for a lookup that keeps no reference to it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// surnames holds the commonest Chinese surnames, for isNickname.
const surnames = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严武戴莫孔向汤" +
	"張劉陳楊黃趙吳孫馬鄭謝許韓馮鄧蕭葉蘇呂盧鍾譚陸賈韋鄒龔錢嚴湯" // Traditional

// isNickname reports 小 or 老 before a surname, which is how colleagues are named (小王, 老张)
// where no dictionary word says otherwise (小时, 老板): a person, which says nothing about a
// tool, and whose characters would otherwise read as "small" and "king".
func isNickname(a, b rune) bool {
	return (a == '小' || a == '老') && strings.ContainsRune(surnames, b)
}

// lookup finds a word in the glossary, then in the table, as written and then converted to
// Simplified a character at a time (the table leaves out Traditional words it can find so).
func (d *Dict) lookup(w string) (glossEntry, bool) {
	return d.lookupAs(w, d.simplified(w))
}

// lookupAs is lookup with w's Simplified form, s, given ("" if w has none).
func (d *Dict) lookupAs(w, s string) (glossEntry, bool) {
	if e, ok := d.gloss[w]; ok {
		return e, true
	}
	if g, ok := d.table(w); ok {
		return tableEntry(g), true
	}
	if s != w && s != "" {
		if e, ok := d.gloss[s]; ok {
			return e, true
		}
		if g, ok := d.table(s); ok {
			return tableEntry(g), true
		}
	}
	return glossEntry{}, false
}

func tableEntry(g string) glossEntry {
	g, name := strings.CutPrefix(g, "*")
	return glossEntry{english: strings.Fields(g), name: name}
}

// table returns the English words of a headword of the table.
func (d *Dict) table(w string) (string, bool) {
	if len(d.heads) == 0 {
		return "", false
	}
	mask := uint64(len(d.heads) - 1)
	for slot := maphash.String(d.seed, w) & mask; d.heads[slot] != 0; slot = (slot + 1) & mask {
		line := d.text[d.heads[slot]-1:]
		if strings.HasPrefix(line, w) && len(line) > len(w) && line[len(w)] == '\t' {
			line = line[len(w)+1:]
			if j := strings.IndexByte(line, '\n'); j >= 0 {
				line = line[:j]
			}
			return line, true
		}
	}
	return "", false
}

// simplified converts w to Simplified a character at a time, or returns "" if a character
// has more than one Simplified form.
func (d *Dict) simplified(w string) string {
	var b strings.Builder
	for _, r := range w {
		if s, ok := d.toSimp[r]; ok {
			if s == 0 {
				return ""
			}
			r = s
		}
		b.WriteRune(r)
	}
	return b.String()
}

// traditional returns the Traditional forms of a Simplified word, at most limit of them;
// a character with two Traditional forms (发: 發, 髮) doubles them.
func (d *Dict) traditional(w string, limit int) []string {
	forms := []string{""}
	for _, r := range w {
		alts := append([]rune{r}, d.toTrad[r]...)
		var next []string
		for _, f := range forms {
			for _, a := range alts {
				if len(next) < limit {
					next = append(next, f+string(a))
				}
			}
		}
		forms = next
	}
	return forms
}

func (d *Dict) load() error {
	d.gloss = map[string]glossEntry{}
	d.toSimp = map[rune]rune{}
	d.toTrad = map[rune][]rune{}
	d.maxLen = 1
	tableErr := d.loadTable()
	if err := d.loadGlossary(glossaryText); err != nil {
		return err
	}
	return tableErr
}

// loadTable reads cedict.txt.gz: headword lines in order, a "#trad" line, then lines of a
// Traditional character and its Simplified forms.
func (d *Dict) loadTable() error {
	zr, err := gzip.NewReader(bytes.NewReader(cedictGz))
	if err != nil {
		return fmt.Errorf("cedict.txt.gz: %w", err)
	}
	// A gzip stream ends with its size, so the text is read into one string of that size.
	var b strings.Builder
	if n := len(cedictGz); n >= 4 {
		b.Grow(int(binary.LittleEndian.Uint32(cedictGz[n-4:])))
	}
	if _, err := io.Copy(&b, zr); err != nil {
		return fmt.Errorf("cedict.txt.gz: %w", err)
	}
	text := b.String()
	heads, pairs, ok := strings.Cut(text, "#trad\n")
	if !ok {
		return fmt.Errorf("cedict.txt.gz: no #trad line")
	}
	d.text = heads
	size := 1
	for size < 2*strings.Count(heads, "\n") { // at most half full: probes stay short
		size <<= 1
	}
	d.heads, d.seed = make([]uint32, size), maphash.MakeSeed()
	prev := ""
	for n, off := 1, 0; off < len(heads); n++ {
		end := strings.IndexByte(heads[off:], '\n')
		if end < 0 {
			end = len(heads) - off
		}
		line := heads[off : off+end]
		head, _, ok := strings.Cut(line, "\t")
		if !ok || head <= prev {
			return fmt.Errorf("cedict.txt.gz: line %d (%q) is not a headword after %q", n, line, prev)
		}
		prev = head
		slot := maphash.String(d.seed, head) & uint64(size-1)
		for d.heads[slot] != 0 {
			slot = (slot + 1) & uint64(size-1)
		}
		d.heads[slot] = uint32(off + 1)
		d.maxLen = max(d.maxLen, utf8.RuneCountInString(head))
		off += end + 1
	}
	simps := map[rune][]rune{}
	for _, line := range strings.Split(pairs, "\n") {
		t, s, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		tr, _ := utf8.DecodeRuneInString(t)
		simps[tr] = []rune(s)
		for _, sr := range simps[tr] {
			d.toTrad[sr] = append(d.toTrad[sr], tr)
		}
	}
	// A character converts when it has one Simplified form and is not itself the Simplified
	// form of another (么 is 麼's, and stays): ./gen left Traditional words out by that rule.
	for tr, ss := range simps {
		switch {
		case len(d.toTrad[tr]) > 0:
		case len(ss) == 1:
			d.toSimp[tr] = ss[0]
		default:
			d.toSimp[tr] = 0 // more than one: no conversion
		}
	}
	return nil
}

// loadGlossary reads glossary.txt: one word a line, then its English words, "-" for a
// function word or "~" for a numeral; "#" starts a comment. Each word is entered under its Simplified and
// Traditional forms as well as written.
func (d *Dict) loadGlossary(text string) error {
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) == 1 || !HasHan(fields[0]) {
			return fmt.Errorf("glossary.txt:%d: %q is not a Chinese word and its English words (or -)", n, sc.Text())
		}
		e := glossEntry{english: fields[1:], glossary: true}
		switch strings.Join(e.english, " ") {
		case "-":
			e = glossEntry{function: true, glossary: true}
		case "~":
			e = glossEntry{function: true, numeral: true}
		}
		w := fields[0]
		forms := []string{w}
		if s := d.simplified(w); s != "" {
			forms = append(forms, d.traditional(s, 16)...)
		}
		for _, f := range forms {
			d.gloss[f] = e
			d.maxLen = max(d.maxLen, utf8.RuneCountInString(f))
		}
	}
	return sc.Err()
}
