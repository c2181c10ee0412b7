package proxy

import (
	"encoding/json"
	"testing"
)

func TestStripTags(t *testing.T) {
	tag := func(r rune) string { return string(r) }
	for _, tc := range []struct {
		name, in, want string
		n              int
	}{
		{"none", `{"text":"hello"}`, `{"text":"hello"}`, 0},
		{"utf-8", `{"text":"hi` + tag(0xE0001) + tag(0xE0041) + tag(0xE007F) + `!"}`, `{"text":"hi!"}`, 3},
		{"escaped", `{"text":"a\udb40\udc41b"}`, `{"text":"ab"}`, 1},
		{"escaped upper case", `{"text":"a\uDB40\uDC7Fb\uDb40\udC00"}`, `{"text":"ab"}`, 2},
		{"hostile: an escaped backslash, then text", `{"text":"\\udb40\\udc41"}`, `{"text":"\\udb40\\udc41"}`, 0},
		{"hostile: three backslashes", `{"text":"\\\udb40\udc41"}`, `{"text":"\\"}`, 1},
		{"past the tags: U+E0080", `{"text":"` + tag(0xE0080) + `"}`, `{"text":"` + tag(0xE0080) + `"}`, 0},
		{"variation selector U+E0100", `{"text":"` + tag(0xE0100) + `"}`, `{"text":"` + tag(0xE0100) + `"}`, 0},
		{"escaped past the tags", `{"text":"\udb40\udc80"}`, `{"text":"\udb40\udc80"}`, 0},
		{"an emoji", `{"text":"\ud83d\ude00 😀"}`, `{"text":"\ud83d\ude00 😀"}`, 0},
		{"a lone high surrogate", `{"text":"\udb40x"}`, `{"text":"\udb40x"}`, 0},
		{"truncated at the end", `"\udb40\udc4`, `"\udb40\udc4`, 0},
		{"in a key", `{"a` + tag(0xE0061) + `":1}`, `{"a":1}`, 1},
	} {
		got, n := stripTags([]byte(tc.in))
		if string(got) != tc.want || n != tc.n {
			t.Errorf("%s: stripTags(%q) = %q, %d; want %q, %d", tc.name, tc.in, got, n, tc.want, tc.n)
		}
		if json.Valid([]byte(tc.in)) && !json.Valid(got) {
			t.Errorf("%s: valid JSON became invalid: %q", tc.name, got)
		}
	}
}
