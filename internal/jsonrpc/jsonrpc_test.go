package jsonrpc

import "testing"

func TestID(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, `7`},
		{`{"jsonrpc": "2.0", "method": "tools/call", "id": "a\"b", "params": {}}`, `"a\"b"`},
		{`{"method":"tools/call","params":{"arguments":{"id":3}},"jsonrpc":"2.0","id":11}`, `11`}, // TypeScript: id last
		{`{"result":{"content":[{"id":3}]},"jsonrpc":"2.0","id":"r-1"} ` + "\n", `"r-1"`},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":3}}`, ``}, // a notification
		{`{"params":{"id":3},"method":"x"}`, ``},                                      // a nested id only
		{`{"jsonrpc":"2.0","id":null,"error":{}}`, `null`},
		{`{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}`, `123456789012345678901234567890`},
		{`garbage`, ``},
	}
	for _, tt := range tests {
		if got := string(ID([]byte(tt.msg))); got != tt.want {
			t.Errorf("ID(%s) = %s, want %s", tt.msg, got, tt.want)
		}
	}
	if got := string(IDOfEnds([]byte(`{"result":{"text":"xxx`), []byte(`xxx"},"jsonrpc":"2.0","id":9}`))); got != "9" {
		t.Errorf("IDOfEnds = %s, want 9", got)
	}
}
