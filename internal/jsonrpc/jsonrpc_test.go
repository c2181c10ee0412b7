package jsonrpc

import (
	"io"
	"strings"
	"testing"
)

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

func TestLines(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"` + strings.Repeat("a", 10000) + `"}}`
	in := "{\"a\":1}\n\n" + long + "\r\n{\"b\":2}\n" + "{\"c\":3}"
	l := NewLines(strings.NewReader(in), 5000)
	want := []string{`{"a":1}`, ``, "", `{"b":2}`, `{"c":3}`}
	for i, w := range want {
		line, head, tail, err := l.Next()
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if i == 2 {
			if line != nil || string(IDOfEnds(head, tail)) != "7" {
				t.Errorf("the long line: %q, id %q", line, IDOfEnds(head, tail))
			}
			continue
		}
		if string(line) != w {
			t.Errorf("line %d = %q, want %q", i, line, w)
		}
	}
	if _, _, _, err := l.Next(); err != io.EOF {
		t.Errorf("after the last line: %v, want EOF", err)
	}
}
