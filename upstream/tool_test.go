package upstream

import (
	"encoding/json"
	"testing"
)

func TestParseTool(t *testing.T) {
	tests := []struct {
		raw        string
		wantErr    bool
		alwaysLoad bool
	}{
		{`{"name":"a","inputSchema":{"type":"object"}}`, false, false},
		{`{"name":"a","_meta":{"anthropic/alwaysLoad":true}}`, false, true},
		{`{"name":"a","_meta":{"anthropic/alwaysLoad":"yes"}}`, false, false},
		{`{"name":""}`, true, false},
		{`[]`, true, false},
	}
	for _, tt := range tests {
		got, err := ParseTool(json.RawMessage(tt.raw))
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseTool(%s) error = %v", tt.raw, err)
			continue
		}
		if got.AlwaysLoad != tt.alwaysLoad {
			t.Errorf("ParseTool(%s).AlwaysLoad = %v", tt.raw, got.AlwaysLoad)
		}
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
