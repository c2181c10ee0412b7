package search

import (
	"strings"
	"unicode/utf8"
)

// Cut returns at most n bytes of s, ending on a whole character.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FirstLine is the first line of text, cut to n bytes (see Cut), with an ellipsis where it
// was cut: for a line of a tool's or a server's description in a list.
func FirstLine(text string, n int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if len(line) <= n {
		return line
	}
	return Cut(line, n) + "…"
}
