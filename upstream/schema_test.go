package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
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

// TestPlainSchema: the shortcut passes a schema as it is only where the full repair would
// change nothing, and it takes most real schemas: every one of the public catalogs' that
// needs no repair and has no escaped name.
func TestPlainSchema(t *testing.T) {
	tests := []struct {
		in    string
		plain bool
	}{
		{`{"type":"object"}`, true},
		{` { "type" : "object" , "properties" : { "a" : { "type" : "string" } , "b.c-d_e" : {} } } `, true},
		{`{"properties":{"a":{}},"type":"object","additionalProperties":false,"x":[1,{"y":null}],"n":-1.5e3,"t":true}`, true},
		{`{"type":"object","description":"a \"quoted\" } ] brace","properties":{"a":{"description":"\\"}}}`, true},
		{`{"type":"object","properties":{}}`, true},
		{`{"properties":{"a":{}}}`, false},                           // no type
		{`{"type":"object","properties":{"a<":{}}}`, false},          // an illegal name
		{`{"type":"object","properties":{"a b":{}}}`, false},         // an illegal name
		{`{"type":"object","properties":{"":{}}}`, false},            // an empty name
		{`{"type":"object","properties":{"名前":{}}}`, false},          // beyond ASCII
		{`{"type":"object","properties":{"a\u003c":{}}}`, false},     // escaped: unsure
		{`{"typ\u0065":"object"}`, false},                            // escaped: unsure
		{`{"type":"object","properties":[1]}`, false},                // not an object: unsure
		{`{"type":"object","properties":{},"properties":{}}`, false}, // twice: unsure
		{`{"type":"object","properties":{"a":{}}`, false},            // cut short
		{`{"type":`, false},
		{`{"type"`, false},
		{`{"type":"obj`, false},
		{`{`, false},
		{`null`, false},
		{``, false},
		{`[{"type":"object"}]`, false},
		{`"{\"type\":1}"`, false},
	}
	for _, tt := range tests {
		if got := plainSchema([]byte(tt.in)); got != tt.plain {
			t.Errorf("plainSchema(%s) = %v, want %v", tt.in, got, tt.plain)
		}
		checkPlainSchema(t, []byte(tt.in))
	}

	files, _ := filepath.Glob("../bench/catalogs/*.json")
	var schemas, plain int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Tools []struct{ InputSchema json.RawMessage }
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			s := tool.InputSchema
			schemas++
			checkPlainSchema(t, s)
			if plainSchema(s) {
				plain++
			} else if out, _, repairs := repairSchemaFully(s); string(out) == string(s) && len(repairs) == 0 && !strings.Contains(string(s), `\u`) {
				t.Errorf("%s: plainSchema(%.200s) = false for a schema that needs nothing", filepath.Base(f), s)
			}
		}
	}
	t.Logf("%d of %d schemas of the public catalogs taken as they are at once", plain, schemas)
}

// checkPlainSchema fails t if plainSchema takes s as it is while the full repair would not.
func checkPlainSchema(t *testing.T, s []byte) {
	t.Helper()
	if !plainSchema(s) {
		return
	}
	if out, args, repairs := repairSchemaFully(s); string(out) != string(s) || args != nil || repairs != nil {
		t.Errorf("plainSchema(%s) = true, but it repairs to %s (%q)", s, out, repairs)
	}
}

func FuzzPlainSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{}}}`, `{"properties":{"a<":1}}`, `{"type":1,"x":"\\\"","properties":{}}`, `{"type":[1,{"a":"}"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if !json.Valid(s) {
			plainSchema(s) // must not panic
			return
		}
		checkPlainSchema(t, s)
	})
}
