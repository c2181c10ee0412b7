package jsonrpc

import (
	"io"
	"strings"
	"testing"
)

func TestIDOfEnds(t *testing.T) {
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
		if got := string(IDOfEnds([]byte(tt.msg), []byte(tt.msg))); got != tt.want {
			t.Errorf("IDOfEnds(%s) = %s, want %s", tt.msg, got, tt.want)
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

// TestParse: the envelope as sent, ids exactly so, and every malformed kind named.
func TestParse(t *testing.T) {
	tests := []struct {
		msg             string
		id, method, bad string
		request, answer bool
		malformed       bool
	}{
		{msg: `{"jsonrpc":"2.0","id":7,"method":"ping"}`, id: `7`, method: "ping", request: true},
		{msg: `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, id: `123456789012345678901234567890`, method: "ping", request: true},
		{msg: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, id: `9007199254740993`, method: "ping", request: true},
		{msg: `{"jsonrpc":"2.0","id":-1.50,"method":"ping"}`, id: `-1.50`, method: "ping", request: true},
		{msg: `{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, id: `"a\"b"`, method: "ping", request: true},
		{msg: `{"jsonrpc":"2.0","id":3,"result":{}}`, id: `3`, answer: true},
		{msg: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, method: "notifications/initialized"},
		{msg: `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, method: "ping", bad: "id must be a string or an integer"},
		{msg: `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, method: "ping", bad: "id must be a string or an integer"},
		{msg: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, method: "ping", bad: "id must be a string or an integer"},
		{msg: `{"jsonrpc":"2.0","id":1,"method":5}`, id: `1`, bad: "method must be a string"},
		{msg: `[1,2]`, bad: "a JSON-RPC message is a JSON object"},
		{msg: `{"jsonrpc":"2.0","id":1,"method":"ping"`, malformed: true},
		{msg: `garbage`, malformed: true},
	}
	for _, tt := range tests {
		m := Parse([]byte(tt.msg))
		id := ""
		if !m.ID.IsNil() {
			b, _ := m.ID.MarshalJSON()
			id = string(b)
		}
		if id != tt.id || m.Method != tt.method || m.Bad != tt.bad || m.Malformed != tt.malformed || m.IsRequest() != tt.request || m.IsAnswer() != tt.answer {
			t.Errorf("Parse(%s) = id %s, method %q, bad %q, malformed %v, request %v, answer %v; want %s, %q, %q, %v, %v, %v",
				tt.msg, id, m.Method, m.Bad, m.Malformed, m.IsRequest(), m.IsAnswer(), tt.id, tt.method, tt.bad, tt.malformed, tt.request, tt.answer)
		}
	}
}
