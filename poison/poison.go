package poison

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Version names the rules: it changes when they do, so that what was found clean by older
// ones is checked again (see package pin).
var Version = func() string {
	h := sha256.New()
	io.WriteString(h, hiddenVersion)
	for _, r := range rules {
		fmt.Fprintf(h, "%s\x00%s\x00", r.name, r.re)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}()

// hiddenVersion names what the code finds beside the rules' expressions (hidden, invisible,
// the rules' skip functions): change it when they change.
const hiddenVersion = "hidden 1"

// Finding is one reason a tool looks poisoned.
type Finding struct {
	Rule string // the rule's short name
	Why  string // what it means, for the user
	// Field is where: "description", or a schema's string at its JSON path.
	Field string
	// Excerpt is the text that matched, its hidden characters shown as \u escapes.
	Excerpt string
}

// Check returns what looks like poisoning in a tool's description and in the strings of
// its schemas (raw JSON each, which may be empty).
func Check(description string, schemas ...json.RawMessage) []Finding {
	var out []Finding
	check := func(field, text string) {
		if f, ok := hidden(text); ok {
			f.Field = field
			out = append(out, f)
		}
		// Anchors are words as ASCII spells them: (?i) also folds the odd non-ASCII
		// letter into an ASCII one (U+017F into s), so other texts are matched in full.
		ascii := isASCII(text)
		var lower string
		if ascii {
			lower = strings.ToLower(text)
		}
		for i := range rules {
			r := &rules[i]
			if ascii && !r.mayMatch(lower) {
				continue
			}
			for _, loc := range r.re.FindAllStringIndex(text, -1) {
				if r.skip == nil || !r.skip(text, loc[0], loc[1]) {
					out = append(out, Finding{Rule: r.name, Why: r.why, Field: field, Excerpt: excerpt(text, loc[0], loc[1])})
					break
				}
			}
		}
	}
	check("description", description)
	for _, s := range schemas {
		eachString(s, "", func(path, text string) { check(path, text) })
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hidden finds characters a client shows as nothing or that change the text's direction:
// Unicode tags (U+E0000 to U+E007F), zero-width characters and bidirectional controls.
func hidden(text string) (Finding, bool) {
	for i, r := range text {
		if invisible(r) {
			return Finding{Rule: "hidden characters", Why: "it holds characters a client shows as nothing, or that reorder the text, so that the user and the model read different things",
				Excerpt: excerpt(text, i, i+utf8.RuneLen(r))}, true
		}
	}
	return Finding{}, false
}

func invisible(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064, r >= 0x2066 && r <= 0x2069:
		return true // zero-width, marks, embeddings and overrides, invisible operators, isolates
	case r == 0xFEFF, r == 0x180E:
		return true
	}
	return false
}

// excerpt is text[start:end] with up to 30 bytes around it, invisible characters shown.
func excerpt(text string, start, end int) string {
	from, to := max(0, start-30), min(len(text), end+30)
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	for _, r := range text[from:to] {
		if invisible(r) {
			b.WriteString(`\u` + strings.ToUpper(strconv.FormatInt(int64(r), 16)))
			continue
		}
		b.WriteRune(r)
	}
	if to < len(text) {
		b.WriteString("…")
	}
	return b.String()
}

// eachString calls f with each string of the JSON value raw (object keys too), and its
// path.
func eachString(raw json.RawMessage, path string, f func(path, text string)) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case string:
			f(path, v)
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		case map[string]any:
			for k, x := range v {
				f(path+"."+k, k)
				walk(path+"."+k, x)
			}
		}
	}
	walk("schema", v)
}
