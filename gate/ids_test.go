package gate

import "testing"

func TestBigIDs(t *testing.T) {
	tests := []struct{ in, wrapped string }{
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, `{"jsonrpc":"2.0","id":"toolsift-id:123456789012345678901234567890","method":"ping"}`},
		{`{"jsonrpc": "2.0", "id": -1234567890123456789, "method": "ping"}`, `{"jsonrpc": "2.0", "id": "toolsift-id:-1234567890123456789", "method": "ping"}`},
		{`{"id":9007199254740993}`, `{"id":"toolsift-id:9007199254740993"}`},
		{`{"method":"ping","jsonrpc":"2.0","id":1234567890123456789}`, `{"method":"ping","jsonrpc":"2.0","id":"toolsift-id:1234567890123456789"}`}, // TypeScript: id last
		{`{"jsonrpc":"2.0","id":42,"method":"ping"}`, `{"jsonrpc":"2.0","id":42,"method":"ping"}`},                                                 // small: as it is
		{`{"jsonrpc":"2.0","id":"123456789012345678901234567890","method":"ping"}`, `{"jsonrpc":"2.0","id":"123456789012345678901234567890","method":"ping"}`},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":12345678901234567890}},"id":1}`, `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"id":12345678901234567890}},"id":1}`}, // an argument is no id
		{`{"jsonrpc":"2.0","id":1.5e300,"method":"ping"}`, `{"jsonrpc":"2.0","id":1.5e300,"method":"ping"}`},
		{`not json {"id":12345678901234567890}`, `not json {"id":12345678901234567890}`},
	}
	for _, tt := range tests {
		got := string(wrapBigID([]byte(tt.in)))
		if got != tt.wrapped {
			t.Errorf("wrapBigID(%s) = %s, want %s", tt.in, got, tt.wrapped)
		}
	}
	answer := `{"jsonrpc":"2.0","id":"toolsift-id:123456789012345678901234567890","result":{}}`
	if got := string(unwrapBigID([]byte(answer))); got != `{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}` {
		t.Errorf("unwrapBigID(%s) = %s", answer, got)
	}
	if got := string(unwrapBigID([]byte(`data: ` + answer + "\n\n"))); got != `data: {"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}`+"\n\n" {
		t.Errorf("unwrapBigID in an SSE event = %s", got)
	}
}
