package proxy

import "testing"

func TestIsRequestAndResponse(t *testing.T) {
	requests := []struct {
		line string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true},
		{`{"method":"tools/call","params":{},"id":"a","jsonrpc":"2.0"}`, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false}, // a notification
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, false},                   // the client's answer to us
		{`not json`, false},
		{``, false},
	}
	for _, tt := range requests {
		if got := isRequest([]byte(tt.line)); got != tt.want {
			t.Errorf("isRequest(%s) = %v, want %v", tt.line, got, tt.want)
		}
	}
	responses := []struct {
		line string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"method\":"}]}}`, true},
		{`{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"result":1}}`, false}, // our request
		{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, false},
		{`{"id":1,"result":{}}`, false}, // not as mcp-go writes
	}
	for _, tt := range responses {
		if got := isResponse([]byte(tt.line)); got != tt.want {
			t.Errorf("isResponse(%s) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
