package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// validJSONCases are JSON texts, valid and not, at the edges of the grammar.
var validJSONCases = []string{
	``, ` `, "\t\n\r ", `null`, ` null `, `nul`, `nulll`, `true`, `tru`, `truex`, `false`, `fals`, `falsey`,
	`0`, `-0`, `-`, `01`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e+10`, `1.5.3`, `0x10`, `+1`, `1 2`, `- 1`, `00`, `-01`,
	`""`, `"`, `"a`, `"\"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\a"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u12"`, `"\u123"`, `"\ud800"`,
	"\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", "\"\xed\xa0\x80\"", "\"日本語\"", "\"a\nb\"", "\"a\tb\"",
	`{}`, `{ }`, `{`, `}`, `{"a":1}`, `{"a" : 1 , "b" : [ ] }`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{a:1}`, `{1:1}`, `{"a":1}}`,
	`[]`, `[ ]`, `[`, `]`, `[1]`, `[1,]`, `[,1]`, `[1 2]`, `[1,,2]`, `[[[]]]`, `[[[]]`, `[{]}`, `[}`, `{]`, `[{"a":[{"b":null}]}]`,
	`{"a":1} x`, `{"a":1}{}`, `[] []`, `{"tools":[{"name":"a",}]}`, `{"tools":[tru]}`, `{"a":"\u00e9\n\"\\"}`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	strings.Repeat("[", maxDepth) + "{}" + strings.Repeat("]", maxDepth),
	strings.Repeat("[{\"a\":", 70) + "[]" + strings.Repeat("}]", 70),
}

func TestValidJSON(t *testing.T) {
	for _, s := range validJSONCases {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.100q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range hostileTools {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.100q) = %v, want %v", s, got, want)
		}
	}
}

// FuzzValidJSON: validJSON is json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONCases {
		if len(s) < 1000 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, want %v", s, got, want)
		}
	})
}
