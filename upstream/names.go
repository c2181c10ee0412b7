package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// MaxNameLen is the longest exposed tool name. Anthropic's API accepts tool names matching
// ^[a-zA-Z0-9_-]{1,64}$.
const MaxNameLen = 64

// Reserved are the names of toolsift's own tools, which no upstream tool may take: a server
// with an empty prefix could otherwise offer a second tool_search.
var Reserved = []string{"tool_search", "call_tool"}

// ExposedName returns the name a client sees for tool of a server with the given prefix:
// prefix__tool, or tool alone for an empty prefix. A name that is too long, uses characters
// outside [A-Za-z0-9_-] or is Reserved is rewritten to a readable stem and a short hash of the
// original, so the same tool always gets the same name and two tools never share one by
// accident.
func ExposedName(prefix, tool string) string {
	name := tool
	if prefix != "" {
		name = prefix + "__" + tool
	}
	if name != "" && len(name) <= MaxNameLen && legal(name) && !slices.Contains(Reserved, name) {
		return name
	}
	return hashed(name)
}

// hashed returns a stem of name with illegal characters replaced, cut to fit, and suffixed
// with 8 hex digits of the name's SHA-256.
func hashed(name string) string {
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:4])
	stem := sanitized(name)
	if max := MaxNameLen - len(suffix) - 1; len(stem) > max {
		stem = stem[:max]
	}
	return stem + "_" + suffix
}

// sanitized returns s with each character outside [A-Za-z0-9_-] replaced by '_'.
func sanitized(s string) string {
	return strings.Map(func(r rune) rune {
		if isLegal(r) {
			return r
		}
		return '_'
	}, s)
}

// legal reports whether s keeps to [A-Za-z0-9_-].
func legal(s string) bool {
	for _, r := range s {
		if !isLegal(r) {
			return false
		}
	}
	return true
}

// isLegal reports whether r is in [A-Za-z0-9_-].
func isLegal(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}
