package upstream

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/mcptest"
)

func deepSchema(levels int) string {
	return strings.Repeat(`{"type":"object","properties":{"a":`, levels) + `{}` + strings.Repeat(`}}`, levels)
}

func TestLineGuard(t *testing.T) {
	fine := `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"fine","inputSchema":{"type":"object","description":"[[{{ not nesting }}]]"}}]}}` + "\n"
	deep := `{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"deep","inputSchema":` + deepSchema(600) + `},{"name":"b","inputSchema":{}}],"nextCursor":"x"}}` + "\n"
	big := `{"jsonrpc":"2.0","id":"r-7","result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 200<<10) + `"}]}}` + "\n"
	bigNote := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 200<<10) + `"}}` + "\n"
	// As the TypeScript SDK writes an answer: id last, and another "id" inside.
	tsBig := `{"result":{"content":[{"type":"text","id":3,"text":"` + strings.Repeat("x", 200<<10) + `"}]},"jsonrpc":"2.0","id":7}` + "\n"
	bigRequest := `{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"x":"` + strings.Repeat("x", 200<<10) + `"}}` + "\n"
	tests := []struct {
		name, in, want, log string
	}{
		{"passes byte for byte", fine, fine, ""},
		{"blank line", "\n", "\n", ""},
		{"not JSON", "npm WARN deprecated something\n" + fine, fine, "not JSON-RPC"},
		{"a tool nested too deep", deep,
			`{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{}}],"nextCursor":"x"}}` + "\n",
			"tool=deep"},
		{"a tool too deep for a decoder, numbers and order kept", `{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"abyss","inputSchema":{"default":` + strings.Repeat("[", 11000) + strings.Repeat("]", 11000) + `}},{"name":"big","inputSchema":{"type":"object","default":12345678901234567890,"e":1.50}}]}}` + "\n",
			`{"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"big","inputSchema":{"type":"object","default":12345678901234567890,"e":1.50}}]}}` + "\n",
			"tool=abyss"},
		{"an answer over the limit", big, `{"jsonrpc":"2.0","id":"r-7","error":{"code":-32603,"message":"the answer was over 102400 bytes, toolsift's limit (maxResultBytes)"}}` + "\n", "too large"},
		{"a notification over the limit", bigNote + fine, fine, "dropped: too large"},
		{"an answer over the limit, id last", tsBig, `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"the answer was over 102400 bytes, toolsift's limit (maxResultBytes)"}}` + "\n", "too large"},
		{"a request over the limit is no answer", bigRequest + fine, fine, "dropped: too large"},
		{"last line without newline", `{"jsonrpc":"2.0","id":9,"result":{}}`, `{"jsonrpc":"2.0","id":9,"result":{}}`, ""},
	}
	for _, tt := range tests {
		var logs mcptest.Buffer
		g := newLineGuard(strings.NewReader(tt.in), 100<<10, slog.New(slog.NewTextHandler(&logs, nil)))
		got, err := io.ReadAll(g)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: read %q, %v; want %q", tt.name, cut(string(got)), err, cut(tt.want))
		}
		if tt.log != "" && !strings.Contains(logs.String(), tt.log) || tt.log == "" && logs.String() != "" {
			t.Errorf("%s: log = %q, want %q", tt.name, logs.String(), tt.log)
		}
		for _, line := range strings.SplitAfter(string(got), "\n") {
			if strings.TrimSpace(line) != "" && !json.Valid([]byte(line)) {
				t.Errorf("%s: %q is not JSON", tt.name, cut(line))
			}
		}
	}
}

func cut(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func TestDepth(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{`{}`, 1}, {`[[[]]]`, 3}, {`{"a":"{{{[[["}`, 1}, {`{"a":"\"{"}`, 1}, {`"x"`, 0}, {deepSchema(10), 21},
	}
	for _, tt := range tests {
		if got := depth([]byte(tt.in)); got != tt.want {
			t.Errorf("depth(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestLineGuardTinyLimit: a limit below what is kept of a message's ends still works.
func TestLineGuardTinyLimit(t *testing.T) {
	g := newLineGuard(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{"x":"0123456789"}}`+"\n"), 10, slog.New(slog.DiscardHandler))
	got, _ := io.ReadAll(g)
	if !strings.Contains(string(got), `"id":1,"error"`) {
		t.Errorf("read %s, want an error answer for id 1", got)
	}
}

// TestRedirectKeepsCredentials: a redirect to another origin is not followed, so none of
// the configured headers reach it (issue 23, row 5; issue 39, attack 2); one within the
// origin keeps them.
func TestRedirectKeepsCredentials(t *testing.T) {
	var got http.Header
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer other.Close()
	var same http.Header
	var origin *httptest.Server
	origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
		case "/downgrade":
			http.Redirect(w, r, strings.Replace(origin.URL, "127.0.0.1", "localhost", 1)+"/moved", http.StatusPermanentRedirect)
		case "/here":
			http.Redirect(w, r, origin.URL+"/moved", http.StatusTemporaryRedirect)
		case "/moved":
			same = r.Header.Clone()
		}
	}))
	defer origin.Close()
	headers := map[string]string{"X-Api-Key": "k-123456", "Authorization": "Bearer b-123456"}
	c := limitedClient(0)
	send := func(path string) error {
		req, _ := http.NewRequest(http.MethodPost, origin.URL+path, strings.NewReader("{}"))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		req.Header.Set("Cookie", "session=abc")
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	}
	for _, path := range []string{"/away", "/downgrade"} {
		same = nil
		if err := send(path); err == nil || !strings.Contains(err.Error(), "another origin") {
			t.Errorf("a redirect to another origin (%s): %v, want it refused", path, err)
		}
	}
	if got != nil || same != nil {
		t.Errorf("the other origin was reached: %v %v", got, same)
	}
	if err := send("/here"); err != nil {
		t.Fatal(err)
	}
	if same.Get("X-Api-Key") != "k-123456" || same.Get("Authorization") != "Bearer b-123456" {
		t.Errorf("a redirect within the server lost its headers: %v", same)
	}
}
