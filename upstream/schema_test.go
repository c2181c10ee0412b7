package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestRepairSchema(t *testing.T) {
	long := strings.Repeat("a", 70)
	tests := []struct {
		name, in, want string
		args           map[string]string // safe name → the server's
	}{
		{"fine, kept byte for byte", `{"type": "object", "properties": {"owner": {"type": "string"}, "a.b-c_d": {}}}`,
			`{"type": "object", "properties": {"owner": {"type": "string"}, "a.b-c_d": {}}}`, nil},
		{"no type", `{"properties":{"a":{}}}`, `{"type":"object","properties":{"a":{}}}`, nil},
		{"twilio's comparisons", `{"type":"object","properties":{"StartTime":{},"StartTime<":{"description":"before"},"StartTime>":{}},"required":["StartTime<"]}`,
			`{"type":"object","properties":{"StartTime":{},"StartTime_lt":{"description":"before"},"StartTime_gt":{}},"required":["StartTime_lt"]}`,
			map[string]string{"StartTime_lt": "StartTime<", "StartTime_gt": "StartTime>"}},
		{"space and unicode", `{"type":"object","properties":{"first name":{},"名前":{}}}`,
			`{"type":"object","properties":{"first_name":{},"__":{}}}`, map[string]string{"first_name": "first name", "__": "名前"}},
		{"collision with a real property", `{"type":"object","properties":{"a_b":{},"a b":{}}}`,
			`{"type":"object","properties":{"a_b":{},"a_b_` + hash8("a b") + `":{}}}`, map[string]string{"a_b_" + hash8("a b"): "a b"}},
		{"too long", `{"type":"object","properties":{"` + long + `":{}}}`,
			`{"type":"object","properties":{"` + strings.Repeat("a", 55) + "_" + hash8(long) + `":{}}}`, map[string]string{strings.Repeat("a", 55) + "_" + hash8(long): long}},
		{"empty name", `{"type":"object","properties":{"":{}}}`, `{"type":"object","properties":{"_` + hash8("") + `":{}}}`, map[string]string{"_" + hash8(""): ""}},
		{"nested names are left alone", `{"type":"object","properties":{"a":{"type":"object","properties":{"b<":{}}}}}`,
			`{"type":"object","properties":{"a":{"type":"object","properties":{"b<":{}}}}}`, nil},
		{"properties not an object", `{"type":"object","properties":[1]}`, `{"type":"object","properties":[1]}`, nil},
		{"not JSON", `{"type":`, `{"type":`, nil},
		{"null", `null`, `null`, nil},
	}
	for _, tt := range tests {
		got, args, repairs := repairSchema(json.RawMessage(tt.in))
		if string(got) != tt.want || !maps.Equal(args, tt.args) {
			t.Errorf("%s: repairSchema(%s) = %s, %v; want %s, %v", tt.name, tt.in, got, args, tt.want, tt.args)
		}
		if (tt.in != tt.want) != (len(repairs) > 0) {
			t.Errorf("%s: repairs = %q", tt.name, repairs)
		}
		for safe := range args {
			if !legalProperty(safe) {
				t.Errorf("%s: %q is not a legal property name", tt.name, safe)
			}
		}
	}
}

func hash8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func TestRenameArgs(t *testing.T) {
	names := map[string]string{"StartTime_lt": "StartTime<"}
	tests := []struct{ in, want string }{
		{`{"To":"+1","StartTime_lt":"2024-01-01","n":12345678901234567890}`, `{"To":"+1","StartTime<":"2024-01-01","n":12345678901234567890}`},
		{`{"To": "+1"}`, `{"To": "+1"}`}, // nothing to rename: sent as it came
		{`[1]`, `[1]`},
		{`{"a":`, `{"a":`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := string(renameArgs(json.RawMessage(tt.in), names)); got != tt.want {
			t.Errorf("renameArgs(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := string(renameArgs(json.RawMessage(`{"x":1}`), nil)); got != `{"x":1}` {
		t.Errorf("renameArgs without names = %s", got)
	}
}

func TestObjectSchema(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"object","properties":{}}`, `{"type":"object","properties":{}}`},    // kept byte for byte
		{`{ "properties" : {"a":{}} }`, `{"type":"object","properties" : {"a":{}} }`}, // gitlab-like: type added
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, `{"type":"object","$schema":"http://json-schema.org/draft-07/schema#"}`},
		{`{}`, `{"type":"object"}`},
		{" \n{ \n}\n", `{"type":"object"}`},
		{`{"type":["object","null"]}`, `{"type":["object","null"]}`}, // another type is the server's to say
		{`{"anyOf":[{"type":"object"}]}`, `{"type":"object","anyOf":[{"type":"object"}]}`},
		{`null`, `null`},
		{`[1]`, `[1]`},
		{`"x"`, `"x"`},
		{`{"a":`, `{"a":`}, // not JSON: left alone
		{``, ``},
	}
	for _, tt := range tests {
		got := string(objectSchema(json.RawMessage(tt.in)))
		if got != tt.want {
			t.Errorf("objectSchema(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if tt.in != tt.want && !json.Valid([]byte(got)) {
			t.Errorf("objectSchema(%q) = %q is not JSON", tt.in, got)
		}
	}
}
