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
