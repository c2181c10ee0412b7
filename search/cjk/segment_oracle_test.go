package cjk

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The segmentation as it was before words were sliced out of the run and headwords hashed:
// each word a new string, each found by binary search. TestSegmentAsBefore holds Segment to
// it.

// tableLines returns the offset of each line of the table's text, in headword order.
func (d *Dict) tableLines() []uint32 {
	lines := []uint32{0}
	for i := 0; i < len(d.text); i++ {
		if d.text[i] == '\n' && i+1 < len(d.text) {
			lines = append(lines, uint32(i+1))
		}
	}
	return lines
}

var oracleLines = sync.OnceValue(func() []uint32 { return std.tableLines() })

func (d *Dict) searchedTable(w string) (string, bool) {
	lines := oracleLines() // the oracle only runs on std
	head := func(i int) string { h, _, _ := strings.Cut(d.text[lines[i]:], "\t"); return h }
	i := sort.Search(len(lines), func(i int) bool { return head(i) >= w })
	if i == len(lines) || head(i) != w {
		return "", false
	}
	line, _, _ := strings.Cut(d.text[lines[i]+uint32(len(w))+1:], "\n")
	return line, true
}

func (d *Dict) searchedLookup(w string) (glossEntry, bool) {
	if e, ok := d.gloss[w]; ok {
		return e, true
	}
	if g, ok := d.searchedTable(w); ok {
		return tableEntry(g), true
	}
	if s := d.simplified(w); s != w && s != "" {
		if e, ok := d.gloss[s]; ok {
			return e, true
		}
		if g, ok := d.searchedTable(s); ok {
			return tableEntry(g), true
		}
	}
	return glossEntry{}, false
}

func (d *Dict) segmentAsBefore(text string) []Word {
	var words []Word
	var run []rune
	for _, r := range text {
		if HasHan(string(r)) {
			run = append(run, r)
			continue
		}
		words, run = d.segmentRunAsBefore(words, run), run[:0]
	}
	return d.segmentRunAsBefore(words, run)
}

func (d *Dict) segmentRunAsBefore(words []Word, run []rune) []Word {
	n := len(run)
	type step struct {
		cost, size int32
		e          glossEntry
	}
	best := make([]step, n+1)
	for i := 1; i <= n; i++ {
		best[i].cost = math.MaxInt32
	}
	for i := 0; i < n; i++ {
		for l := min(d.maxLen, n-i); l >= 1; l-- {
			e, ok := d.searchedLookup(string(run[i : i+l]))
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

// TestSegmentAsBefore: every Chinese request of bench/, every glossary word in each of its
// forms, every headword of the table, and random strings of their characters in Simplified
// and Traditional, segment as before.
func TestSegmentAsBefore(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	var texts []string
	files, _ := filepath.Glob("../../bench/zh*.yaml")
	if len(files) == 0 {
		t.Fatal("no bench/zh*.yaml")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, strings.Split(string(data), "\n")...)
	}
	for w := range std.gloss {
		texts = append(texts, w, "帮我"+w+"一下", w+w)
	}
	var chars []rune
	for _, off := range oracleLines() {
		h, _, _ := strings.Cut(std.text[off:], "\t")
		texts = append(texts, h)
		chars = append(chars, []rune(h)...)
	}
	for r := range std.toSimp {
		chars = append(chars, r) // Traditional, some with more than one Simplified form
	}
	chars = append(chars, '小', '老', '王', '张')
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		run := make([]rune, 1+rng.IntN(24))
		for i := range run {
			run[i] = chars[rng.IntN(len(chars))]
		}
		texts = append(texts, string(run))
	}
	for _, text := range texts {
		got, want := std.Segment(text), std.segmentAsBefore(text)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Segment(%q) = %s, before %s", text, show(got), show(want))
		}
	}
	t.Logf("%d texts", len(texts))
}
