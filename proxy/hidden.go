package proxy

import "bytes"

// stripTags returns raw, JSON, without the Unicode tag characters (U+E0000 to U+E007F)
// it holds, and how many it removed. They show as nothing in a client, yet a model reads
// them: text hidden from the user in a tool's result ("ASCII smuggling"). Both ways JSON
// writes them are removed: as UTF-8, and as the escaped surrogate pair \uDB40\uDC00 to
// \uDB40\uDC7F (in either case). raw is returned as it is when it holds none.
func stripTags(raw []byte) ([]byte, int) {
	if bytes.IndexByte(raw, 0xF3) < 0 && !escapedTag(raw) {
		return raw, 0
	}
	out := make([]byte, 0, len(raw))
	n := 0
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == 0xF3 && i+3 < len(raw) && raw[i+1] == 0xA0 && (raw[i+2] == 0x80 || raw[i+2] == 0x81) && raw[i+3]&0xC0 == 0x80:
			// U+E0000 to U+E007F: F3 A0 80 80 to F3 A0 81 BF.
			i += 4
			n++
		case c == '\\' && i+1 < len(raw):
			if raw[i+1] == 'u' && i+12 <= len(raw) && isTagPair(raw[i:i+12]) {
				i += 12
				n++
				continue
			}
			// Any other escape is copied whole, so that an escaped backslash is never
			// read as the start of one.
			end := i + 2
			if raw[i+1] == 'u' {
				end = min(i+6, len(raw))
			}
			out = append(out, raw[i:end]...)
			i = end
		default:
			out = append(out, c)
			i++
		}
	}
	return out, n
}

// escapedTag reports whether raw may hold an escaped tag character: \uDB40 in any case.
func escapedTag(raw []byte) bool {
	for i := bytes.Index(raw, []byte(`\u`)); i >= 0; {
		if i+6 <= len(raw) && bytes.EqualFold(raw[i+2:i+6], []byte("db40")) {
			return true
		}
		j := bytes.Index(raw[i+2:], []byte(`\u`))
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

// isTagPair reports whether s, 12 bytes, is \uDB40\uDCxx with xx from 00 to 7F.
func isTagPair(s []byte) bool {
	if !bytes.EqualFold(s[:8], []byte(`\udb40\u`)) || !bytes.EqualFold(s[8:10], []byte("dc")) {
		return false
	}
	hi, lo := hexDigit(s[10]), hexDigit(s[11])
	return hi >= 0 && hi <= 7 && lo >= 0
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
