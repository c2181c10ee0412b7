package search

import (
	"strings"
	"testing"
)

func TestCut(t *testing.T) {
	long := strings.Repeat("é", 100) // two bytes each
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abcdé", 5, "abcd"}, // inside a character
		{"abcdé", 6, "abcdé"},
		{long, 100, strings.Repeat("é", 50)},
		{long, 99, strings.Repeat("é", 49)},
		{"", 0, ""},
		{"x", 0, ""},
	}
	for _, tt := range tests {
		if got := Cut(tt.s, tt.n); got != tt.want {
			t.Errorf("Cut(%.10q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
	for in, want := range map[string]string{
		"one\ntwo":        "one",
		"  short  ":       "short",
		"a longer line":   "a longer…",
		"héllo wörld, si": "héllo w…",
	} {
		if got := FirstLine(in, 8); got != want {
			t.Errorf("FirstLine(%q, 8) = %q, want %q", in, got, want)
		}
	}
}
