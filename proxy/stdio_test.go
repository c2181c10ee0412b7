package proxy

import (
	"strings"
	"testing"
)

func TestRequestAndResponseIDs(t *testing.T) {
	requests := []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `1`},
		{`{"method":"tools/call","params":{},"id":"a","jsonrpc":"2.0"}`, `"a"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, ``}, // a notification
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, ``},                   // the client's answer to us
		{`not json`, ``},
		{``, ``},
	}
	for _, tt := range requests {
		if got, _, _ := request([]byte(tt.line)); string(got) != tt.want {
			t.Errorf("request(%s) id = %s, want %s", tt.line, got, tt.want)
		}
	}
	long := `"` + strings.Repeat("x", 300) + `"`
	responses := []struct{ line, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"method\":"}]}}`, `1`},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`, `"x"`},
		{`{"jsonrpc":"2.0","id":` + long + `,"result":{}}`, long},                                // a long id is still found
		{`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"result":1}}`, ``}, // our request
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, ``},
		{`{"id":1,"result":{}}`, ``}, // not as mcp-go writes
	}
	for _, tt := range responses {
		if got, _ := responseID([]byte(tt.line)); string(got) != tt.want {
			t.Errorf("responseID(%s) = %s, want %s", tt.line, got, tt.want)
		}
	}
}

// TestOwedAnswers: the answers a refusal or a parse error gets, to no request on the list,
// leave the requests still owed alone.
func TestOwedAnswers(t *testing.T) {
	var refused []string
	d := &drainReader{maxLine: 100, refuse: func(id []byte) { refused = append(refused, string(id)) }}
	// The second is over maxLine, with its id last (as the TypeScript SDK writes it) and
	// another "id" in its arguments.
	d.take([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n" +
		`{"method":"tools/call","params":{"arguments":{"id":99},"x":"` + strings.Repeat("y", 200) + `"},"jsonrpc":"2.0","id":2}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"))
	if len(refused) != 1 || refused[0] != "2" {
		t.Errorf("refused ids %q, want [2]", refused)
	}
	if n := d.owed.len(); n != 2 {
		t.Fatalf("owed %d answers, want 2 (the refused request is not passed on)", n)
	}
	d.owed.answered([]byte(`2`))    // the refusal's answer
	d.owed.answered([]byte(`null`)) // a parse error's
	d.owed.answered([]byte(`1`))
	if n := d.owed.len(); n != 1 {
		t.Errorf("owed %d answers after one was answered, want 1", n)
	}
}
