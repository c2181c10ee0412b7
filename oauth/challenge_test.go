package oauth

import (
	"net/http"
	"testing"
)

func TestParseChallenge(t *testing.T) {
	tests := []struct {
		headers []string
		want    Challenge
		ok      bool
	}{
		{nil, Challenge{}, false},
		{[]string{`Bearer`}, Challenge{}, true},
		{[]string{`Bearer realm="x"`}, Challenge{}, true},
		{[]string{`Bearer resource_metadata="https://s/.well-known/oauth-protected-resource/mcp", scope="a b"`},
			Challenge{ResourceMetadata: "https://s/.well-known/oauth-protected-resource/mcp", Scope: "a b"}, true},
		{[]string{`Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://s/m"`},
			Challenge{ResourceMetadata: "https://s/m", Scope: "mcp:basic mcp:write", Error: "insufficient_scope"}, true},
		{[]string{`bearer scope=read`}, Challenge{Scope: "read"}, true},
		{[]string{`Basic realm="x"`}, Challenge{}, false},
		{[]string{`Basic realm="x", Bearer scope="s"`}, Challenge{Scope: "s"}, true},
		{[]string{`Basic realm="x"`, `Bearer scope="s2"`}, Challenge{Scope: "s2"}, true},
		{[]string{`Bearer scope="a \"quoted\" b", error=invalid_token`}, Challenge{Scope: `a "quoted" b`, Error: "invalid_token"}, true},
		{[]string{`Bearer scope="unterminated`}, Challenge{Scope: "unterminated"}, true},
		{[]string{`Bearer, Basic realm=y`}, Challenge{}, true},
		{[]string{`=garbage`}, Challenge{}, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for _, v := range tt.headers {
			h.Add("WWW-Authenticate", v)
		}
		got, ok := ParseChallenge(h)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseChallenge(%q) = %+v, %v; want %+v, %v", tt.headers, got, ok, tt.want, tt.ok)
		}
	}
}
