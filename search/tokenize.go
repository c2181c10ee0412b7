package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens splits text into normalised search terms: words split on punctuation, snake_case,
// kebab-case, dots, camelCase and letter/digit boundaries, lower-cased, stop words dropped and
// plurals folded to their singular. Runs of CJK characters become overlapping bigrams (and a
// lone character stays a unigram), since such text has no spaces to split on.
func Tokens(text string) []string {
	terms, _ := analyze(text)
	return terms
}

// analyze returns the terms of text and, beside each, the word it came from in lower case
// before stemming (a CJK term stands for itself). Typos are matched on those words: a
// misspelling stems differently from the word it misspells.
func analyze(text string) (terms, raws []string) {
	return analyzer{}.analyze(text)
}

// analyzer turns text into terms. Its cache, when not nil, remembers each word's term:
// building an index meets the same words thousands of times.
type analyzer struct {
	cache map[string]analyzed
}

type analyzed struct {
	term, raw string // raw is the word in lower case; an empty term is a stop word
}

// interner numbers terms, so that building an index can count them in arrays, not maps.
type interner struct {
	ids   map[string]int32
	terms []string
}

func (in *interner) id(term string) int32 {
	id, ok := in.ids[term]
	if !ok {
		id = int32(len(in.terms))
		in.ids[term] = id
		in.terms = append(in.terms, term)
	}
	return id
}

func (a analyzer) analyze(text string) (terms, raws []string) {
	a.each(text, func(term, raw string) {
		terms = append(terms, term)
		raws = append(raws, raw)
	})
	return terms, raws
}

func (a analyzer) each(text string, f func(term, raw string)) {
	eachWord(text, func(w string) {
		if isCJK(firstRune(w)) {
			for _, t := range appendCJK(nil, w) {
				f(t, t)
			}
			return
		}
		an, ok := a.cache[w]
		if !ok {
			lower := strings.ToLower(w)
			an = analyzed{raw: lower}
			if !stopWords[lower] {
				an.term = Stem(lower)
			}
			if a.cache != nil {
				a.cache[w] = an
			}
		}
		if an.term != "" {
			f(an.term, an.raw)
		}
	})
}

// eachWord calls f with each raw word of text: maximal runs of letters or digits, further split at
// lower-to-upper case changes (fooBar), at the end of an acronym (HTTPServer), between letters
// and digits, and between CJK and other scripts.
// It does not allocate.
func eachWord(text string, f func(string)) {
	start := -1
	var prev rune
	var prevClass byte
	for i := 0; i < len(text); {
		b := text[i]
		if b < utf8.RuneSelf {
			// ASCII, nearly all of tool text, is classified by table.
			c := asciiClass[b]
			switch {
			case c == classOther:
				if start >= 0 {
					f(text[start:i])
					start = -1
					if b == '\'' {
						i += possessive(text[i+1:])
					}
				}
			case start < 0:
				start = i
			case prevClass == classWide:
				if splits(prev, rune(b)) {
					f(text[start:i])
					start = i
				}
			case prevClass == classUpper && c == classUpper:
				// The end of an acronym: HTTPServer splits before the S.
				if i+1 < len(text) && text[i+1] < utf8.RuneSelf && asciiClass[text[i+1]] == classLower {
					f(text[start:i])
					start = i
				}
			case c != prevClass && !(prevClass == classUpper && c == classLower):
				f(text[start:i])
				start = i
			}
			prev, prevClass = rune(b), c
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isAlnum(r) {
			if start >= 0 {
				f(text[start:i])
				start = -1
				if r == '’' {
					i += possessive(text[i+size:])
				}
			}
			i += size
			prevClass = classOther
			continue
		}
		if start >= 0 {
			split := splits(prev, r)
			if !split && isUpper(prev) && isUpper(r) && i+size < len(text) {
				next, _ := utf8.DecodeRuneInString(text[i+size:])
				split = isLower(next)
			}
			if split {
				f(text[start:i])
				start = i
			}
		} else {
			start = i
		}
		prev, prevClass = r, classWide
		i += size
	}
	if start >= 0 {
		f(text[start:])
	}
}

// possessive returns how many bytes of rest, what follows an apostrophe that ends a word,
// are a possessive or a contraction's s ("someone's", "what's"), to be skipped: 1 or 0. Such
// an s means nothing to search, yet as a word of its own it would match every "S3" or
// "s01" a catalog holds.
func possessive(rest string) int {
	if len(rest) == 0 || rest[0]|0x20 != 's' {
		return 0
	}
	if len(rest) > 1 {
		if rest[1] < utf8.RuneSelf {
			if asciiClass[rest[1]] != classOther {
				return 0
			}
		} else if r, _ := utf8.DecodeRuneInString(rest[1:]); isAlnum(r) {
			return 0
		}
	}
	return 1
}

// splits reports whether a word breaks between letters or digits prev and r: at a digit
// boundary, a lower-to-upper case change, or a change into or out of CJK.
func splits(prev, r rune) bool {
	return isDigit(r) != isDigit(prev) || isUpper(r) && isLower(prev) || isCJK(r) != isCJK(prev)
}

// Character classes of ASCII bytes for eachWord; classWide marks a non-ASCII letter.
const (
	classOther byte = iota
	classLower
	classUpper
	classDigit
	classWide
)

var asciiClass = func() (t [utf8.RuneSelf]byte) {
	for b := 'a'; b <= 'z'; b++ {
		t[b] = classLower
	}
	for b := 'A'; b <= 'Z'; b++ {
		t[b] = classUpper
	}
	for b := '0'; b <= '9'; b++ {
		t[b] = classDigit
	}
	return t
}()

// ASCII fast paths for the unicode predicates: most tool text is ASCII.
func isAlnum(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsDigit(r)
}

func isUpper(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.IsUpper(r)
}

func isLower(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.IsLower(r)
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

func isCJK(r rune) bool {
	if r < 0x1100 { // below Hangul Jamo, the first CJK block
		return false
	}
	// U+30FC, the katakana length mark, belongs to the Common script.
	return r == 'ー' || unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// appendCJK indexes a run of CJK characters, which has no spaces to split on, as its
// characters (but the commonest) and its overlapping two-character pairs. On the CloudLedger
// set, pairs alone reached recall@5 0.83, characters alone 0.87, both 0.90: pairs catch
// two-character words, characters catch a word written differently ("加人" for "增加").
func appendCJK(out []string, w string) []string {
	rs := []rune(w)
	for _, r := range rs {
		if !cjkStop[r] {
			out = append(out, string(r))
		}
	}
	for i := 0; i+1 < len(rs); i++ {
		out = append(out, string(rs[i:i+2]))
	}
	return out
}

// cjkStop holds CJK characters too common to index alone.
var cjkStop = func() map[rune]bool {
	m := map[rune]bool{}
	for _, r := range "的了吗呢吧啊我你他她们是在把这那个就都也和与或及被给" {
		m[r] = true
	}
	return m
}()

// Stem reduces a lower-case English word to its Porter stem (issues, issue → issu; created,
// creating → creat). Words with digits or letters outside a–z are kept whole.
func Stem(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	return porter(w)
}

var stopWords = set(`a an the and or of to in on at by for from with into onto
	is are was were be been being it its this that these those there here
	i me my we our you your he she they them their please can could would should will shall
	do does did doing have has had just some any about via using also than then so
	what which who whom how when where why if else not no want need like`)

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}
