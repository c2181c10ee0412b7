package upstream

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The functions in this file read JSON by scanning it, for the paths that every listed tool
// takes (splitPage, splitTool, plainSchema), where encoding/json's decoder costs most of what
// a server's listing does. Each is held to what encoding/json does, and tells its callers
// when it is unsure, for them to leave to encoding/json.

// eachMember calls f with the name of each member of the JSON object at s[i] and its value,
// until f returns false. It reports false if f did, or if a name has an escape in it, or if
// the object ends early. It checks little else: s should be valid JSON. The value is a slice
// of s whose capacity ends with it, so that appending to it cannot write over s.
func eachMember(s []byte, i int, f func(key, value []byte) bool) bool {
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
		kend := skipString(s, i)
		if kend < 0 || bytes.IndexByte(s[i:kend], '\\') >= 0 {
			return false
		}
		key := s[i+1 : kend-1]
		i = skipSpace(s, kend)
		if i == len(s) || s[i] != ':' {
			return false
		}
		i = skipSpace(s, i+1)
		if i == len(s) {
			return false
		}
		end := skipValue(s, i)
		if end <= i || !f(key, s[i:end:end]) {
			return false
		}
		i = end
	}
}

// eachElement calls f with each element of the JSON array at s[i], until f returns false. It
// reports false if f did, or if the array ends early. As eachMember, it checks little else,
// and each element is a slice of s whose capacity ends with it.
func eachElement(s []byte, i int, f func(value []byte) bool) bool {
	i++ // [
	for {
		i = skipSpace(s, i)
		if i == len(s) {
			return false
		}
		switch s[i] {
		case ']':
			return true
		case ',':
			i++
			continue
		}
		end := skipValue(s, i)
		if end <= i || !f(s[i:end:end]) {
			return false
		}
		i = end
	}
}

// eachKnownMember calls f with the index in names of each member of the JSON object at s[i]
// that one of names names, and with its value, until f returns false. It reports false as
// eachMember does, and also for an object that names one of them twice, or with a key
// encoding/json might match to one of them though it differs (see matchKey). names must be
// ASCII, and at most 64.
func eachKnownMember(s []byte, i int, names []string, f func(k int, value []byte) bool) bool {
	var seen uint64
	return eachMember(s, i, func(key, value []byte) bool {
		k, sure := matchKey(key, names)
		switch {
		case !sure || k >= 0 && seen&(1<<k) != 0:
			return false
		case k < 0:
			return true
		}
		seen |= 1 << k
		return f(k, value)
	})
}

// matchKey returns the index of the object member name key in names, or -1 if it is none of
// them. It reports false for a key that encoding/json might match to one of names though it
// differs from it: one that differs only in case, or any outside ASCII (encoding/json folds
// K and ſ to k and s). Its callers leave objects with such keys to encoding/json. names must
// be ASCII.
func matchKey(key []byte, names []string) (int, bool) {
	for i, n := range names {
		if string(key) == n {
			return i, true
		}
	}
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return -1, false
		}
	}
	for _, n := range names {
		if asciiEqualFold(key, n) {
			return -1, false
		}
	}
	return -1, true
}

// asciiEqualFold reports whether a and b, both ASCII, are equal but for case.
func asciiEqualFold(a []byte, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if lowerASCII(a[i]) != lowerASCII(b[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
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
	open := i
	for i++; ; i++ {
		// Strings are most of JSON's bytes, and IndexByte takes them many at a time.
		j := bytes.IndexByte(s[i:], '"')
		if j < 0 {
			return -1
		}
		i += j
		// The quote ends the string unless an odd number of backslashes escape it.
		k := i
		for k > open+1 && s[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			return i + 1
		}
	}
}

// skipValue returns the index just past the JSON value that starts at s[i], or -1 if it
// does not end.
func skipValue(s []byte, i int) int {
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
	default:
		// A number, true, false or null.
		for i < len(s) && !endsLiteral[s[i]] {
			i++
		}
		return i
	}
	depth := 0
	for {
		for i < len(s) && !structural[s[i]] {
			i++
		}
		if i == len(s) {
			return -1
		}
		switch s[i] {
		case '"':
			if i = skipString(s, i); i < 0 {
				return -1
			}
			continue
		case '{', '[':
			depth++
		default: // } or ]
			if depth--; depth == 0 {
				return i + 1
			}
		}
		i++
	}
}

// structural holds the bytes skipValue stops at in an array or object; endsLiteral, those
// that end a number, true, false or null.
var structural, endsLiteral = byteSet(`"{}[]`), byteSet(", \t\n\r}]")

// byteSet returns the set of the bytes in s.
func byteSet(s string) (set [256]bool) {
	for i := range len(s) {
		set[s[i]] = true
	}
	return set
}

// jsonString decodes a valid JSON value into a string as encoding/json does, null being "";
// it reports false for any other value than a string or null.
func jsonString(v []byte) (string, bool) {
	switch v[0] {
	case 'n':
		return "", true
	case '"':
	default:
		return "", false
	}
	s := v[1 : len(v)-1]
	if !utf8.Valid(s) {
		// encoding/json replaces each byte that is not UTF-8.
		var out string
		err := json.Unmarshal(v, &out)
		return out, err == nil
	}
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return string(s), true
	}
	var b strings.Builder
	b.Grow(len(s))
	for ; i >= 0; i = bytes.IndexByte(s, '\\') {
		b.Write(s[:i])
		c := s[i+1]
		s = s[i+2:]
		switch c {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(s)
			s = s[4:]
			if utf16.IsSurrogate(r) {
				// Half of a pair, whose other half must follow, or a character
				// that is not there.
				r2 := rune(-1)
				if len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
					r2 = hex4(s[2:])
				}
				if r = utf16.DecodeRune(r, r2); r != unicode.ReplacementChar {
					s = s[6:]
				}
			}
			b.WriteRune(r)
		default: // " \ /
			b.WriteByte(c)
		}
	}
	b.Write(s)
	return b.String(), true
}

// hex4 returns the value of the four hexadecimal digits s starts with.
func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// maxDepth is how deeply encoding/json lets arrays and objects nest.
const maxDepth = 10000

// validJSON reports whether s is one JSON value, with whitespace around it, exactly as
// json.Valid does, in a fraction of its time: json.Valid steps a state machine through a
// call for each byte. Like it, it takes any bytes in a string but control characters, UTF-8
// or not, and no arrays and objects nested deeper than maxDepth.
func validJSON(s []byte) bool {
	// open holds the arrays and objects the scan is in, '[' or '{', innermost last.
	var stack [64]byte
	open := stack[:0]
	i := skipSpace(s, 0)
	for {
		// A value starts at s[i].
		if i == len(s) {
			return false
		}
		switch c := s[i]; c {
		case '{', '[':
			if len(open) == maxDepth {
				return false
			}
			open = append(open, c)
			i = skipSpace(s, i+1)
			if i < len(s) && s[i] == c+2 { // } or ]
				open = open[:len(open)-1]
				i++
				break
			}
			if c == '{' {
				if i = validKey(s, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			if i = validString(s, i); i < 0 {
				return false
			}
		case 't':
			if !bytes.HasPrefix(s[i:], []byte("true")) {
				return false
			}
			i += len("true")
		case 'f':
			if !bytes.HasPrefix(s[i:], []byte("false")) {
				return false
			}
			i += len("false")
		case 'n':
			if !bytes.HasPrefix(s[i:], []byte("null")) {
				return false
			}
			i += len("null")
		default:
			if i = validNumber(s, i); i < 0 {
				return false
			}
		}
		// A value ended before s[i]: the arrays and objects it ends, then a comma.
		for {
			i = skipSpace(s, i)
			if len(open) == 0 {
				return i == len(s)
			}
			if i == len(s) {
				return false
			}
			if s[i] == ',' {
				break
			}
			if s[i] != open[len(open)-1]+2 {
				return false
			}
			open = open[:len(open)-1]
			i++
		}
		i = skipSpace(s, i+1)
		if open[len(open)-1] == '{' {
			if i = validKey(s, i); i < 0 {
				return false
			}
		}
	}
}

// validKey returns where the value of the object member whose name starts at s[i] starts,
// past its name, colon and whitespace, or -1 if they are not valid JSON.
func validKey(s []byte, i int) int {
	if i == len(s) || s[i] != '"' {
		return -1
	}
	if i = validString(s, i); i < 0 {
		return -1
	}
	i = skipSpace(s, i)
	if i == len(s) || s[i] != ':' {
		return -1
	}
	return skipSpace(s, i+1)
}

// plainByte holds the bytes that a JSON string may hold as they are: all but control
// characters, quotes and backslashes.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString returns the index just past the valid JSON string that starts at s[i], or -1
// if it is not one.
func validString(s []byte, i int) int {
	for i++; ; {
		for i < len(s) && plainByte[s[i]] {
			i++
		}
		if i == len(s) {
			return -1
		}
		switch s[i] {
		case '"':
			return i + 1
		case '\\':
		default:
			return -1 // a control character
		}
		if i+1 == len(s) {
			return -1
		}
		switch s[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) || !isHex(s[i+4]) || !isHex(s[i+5]) {
				return -1
			}
			i += 6
		default:
			return -1
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// validNumber returns the index just past the JSON number that starts at s[i], or -1 if
// none does. What follows it is the caller's to check.
func validNumber(s []byte, i int) int {
	if s[i] == '-' {
		i++
	}
	switch {
	case i == len(s):
		return -1
	case s[i] == '0':
		i++
	case '1' <= s[i] && s[i] <= '9':
		i = skipDigits(s, i+1)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		if i++; i == len(s) || !isDigit(s[i]) {
			return -1
		}
		i = skipDigits(s, i)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		if i++; i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i == len(s) || !isDigit(s[i]) {
			return -1
		}
		i = skipDigits(s, i)
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// skipDigits returns the index of the first byte at or after i that is not a digit.
func skipDigits(s []byte, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
