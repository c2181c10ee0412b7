// Package terminal makes text from elsewhere safe to print: a remote's metadata, a repo's
// file, an upstream's answer. Such text may carry bytes a terminal acts on (ESC sequences
// that move the cursor or rewrite a line, CR that returns over what was printed, BEL) or
// characters that reorder what is shown (bidirectional overrides), so a user reading it
// would see something other than what is there.
package terminal

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every character a terminal could act on written as a Go escape
// (\x1b, \r, \u202e, \U000e0041), invalid UTF-8 bytes as \xNN, and a backslash doubled, so that what
// is printed is what s holds, on one line. Text with nothing to escape comes back as is.
func Escape(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafe(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean reports whether s has nothing Escape would change.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 {
			if c < 0x80 {
				return false
			}
			for _, r := range s[i:] {
				if r == utf8.RuneError || r < 0x20 || r == 0x7f || r == '\\' || unsafe(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// unsafe reports the non-ASCII characters a terminal acts on or that change what is shown
// around them: C1 controls (U+0080–U+009F; U+009B is a CSI on its own), bidirectional
// embeddings, overrides and isolates, line and paragraph separators, zero-width and
// invisible characters, the byte-order mark and the tag characters.
func unsafe(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f,
		r == 0x061c, r == 0x200b, r == 0x200c, r == 0x200d, r == 0x200e, r == 0x200f,
		r >= 0x2028 && r <= 0x202e,
		r >= 0x2060 && r <= 0x2069,
		r == 0xfeff,
		r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return false
}

// Lines is Escape for text of several lines: each line is escaped, and the line breaks
// between them are kept.
func Lines(s string) string {
	if clean(strings.ReplaceAll(s, "\n", "")) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
	}
	return strings.Join(lines, "\n")
}
