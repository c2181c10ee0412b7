package upstream

import "bytes"

// The functions in this file read JSON by scanning it, for the paths that every listed tool
// takes, where encoding/json's decoder would cost most of what a server's listing does.

// eachMember calls f with the name of each member of the JSON object at s[i], and where its
// value starts, until f returns false. It reports false if f did, or if a name has an escape
// in it, or if the object ends early. It checks little else: s should be valid JSON.
func eachMember(s []byte, i int, f func(key []byte, value int) bool) bool {
	i++ // {
	for {
		i = skipSpace(s, i)
		if i == len(s) {
			return false
		}
		switch s[i] {
		case '}':
			return true
		case ',':
			i++
			continue
		case '"':
		default:
			return false
		}
		end := skipString(s, i)
		if end < 0 || bytes.IndexByte(s[i:end], '\\') >= 0 {
			return false
		}
		key := s[i+1 : end-1]
		i = skipSpace(s, end)
		if i == len(s) || s[i] != ':' {
			return false
		}
		i = skipSpace(s, i+1)
		if i == len(s) || !f(key, i) {
			return false
		}
		if i = skipValue(s, i); i < 0 {
			return false
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not JSON whitespace.
func skipSpace(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the JSON string that starts at s[i], or -1 if it
// does not end.
func skipString(s []byte, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index just past the JSON value that starts at s[i], or -1 if it
// does not end.
func skipValue(s []byte, i int) int {
	depth := 0
	for i < len(s) {
		switch s[i] {
		case '"':
			if i = skipString(s, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i // the end of a number, true, false or null
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	if depth == 0 {
		return i // a number, true, false or null that ends s
	}
	return -1
}
