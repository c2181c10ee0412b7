package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r := New("s3cr3t-value", "s3cr3t", "1", "true", "p@ss word/1", "  padded-secret  ", "日本語の秘密鍵")
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{"nothing to hide here", "nothing to hide here"},
		{"s3cr3t-value", M},
		{"at the end: s3cr3t-value", "at the end: " + M},
		{`{"key":"s3cr3t-value"}`, `{"key":"` + M + `"}`},
		// The longer of two secrets is masked whole, not a part of it.
		{"x s3cr3t-value y s3cr3t z", "x " + M + " y " + M + " z"},
		{"short values are settings: 1 true", "short values are settings: 1 true"},
		{"escaped: p%40ss+word%2F1 and p@ss%20word%2F1", "escaped: " + M + " and " + M},
		{"trimmed: padded-secret", "trimmed: " + M},
		{"non-ASCII: 日本語の秘密鍵です", "non-ASCII: " + M + "です"},
		// URLs lose user information and query values, keep host and path.
		{`Post "http://127.0.0.1:9/mcp?api_key=K1&x=2": connection refused`, `Post "http://127.0.0.1:9/mcp?api_key=` + M + `&x=` + M + `": connection refused`},
		{"https://user:PASSWORD@host.example/v1 failed", "https://" + M + "@host.example/v1 failed"},
		{"see https://host/path#access_token=abc123", "see https://host/path#" + M},
		{"http://host/plain and more", "http://host/plain and more"},
		// Known shapes.
		{"Error: GitHub rejected token ghp_0123456789abcdefABCDEF0123", "Error: GitHub rejected token " + M},
		{"github_pat_11AAAAAAA0123456789_abcdefghijklmnop", M},
		{"slack xoxb-1234-5678-abcdefgh", "slack " + M},
		{"key sk-proj-abcdefghijklmnopqrstuvwx", "key " + M},
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwx-yz", "key " + M},
		{"AKIAABCDEFGHIJKLMNOP in env", M + " in env"},
		{"invalid API key sk_live_0123456789abcdefghij", "invalid API key " + M},
		{"Authorization: Bearer eyJhbGciOi.abc123.def456", "Authorization: Bearer " + M},
		{"Authorization: Basic dXNlcjpwYXNzMTIz", "Authorization: Basic " + M},
		{"basic authentication failed", "basic authentication failed"},
		// Named values in queries, JSON, YAML and prose.
		{"api_key=abc123&q=1", "api_key=" + M + "&q=1"},
		{`{"apiKey": "abc-123", "model": "m"}`, `{"apiKey": "` + M + `", "model": "m"}`},
		{`"refresh_token":"r1-r2"`, `"refresh_token":"` + M + `"`},
		{"password: hunter22", "password: " + M},
		{"token=xyz", "token=" + M},
		{"max_tokens=100 tokens: 5", "max_tokens=100 tokens: 5"},
		// A variable's name is no secret: toolsift's own hint, and a reference, stay as written.
		{"${GITHUB_TOKEN} is not set (export it where toolsift is started, or write ${GITHUB_TOKEN:-default})", "${GITHUB_TOKEN} is not set (export it where toolsift is started, or write ${GITHUB_TOKEN:-default})"},
		{"env: {PASSWORD: ${DB_PASSWORD:-none}}", "env: {PASSWORD: " + M + "}}"}, // the value of a PASSWORD key is masked, whatever it is
		{"write ${API_KEY:-x} or token: abc123", "write ${API_KEY:-x} or token: " + M},
		{"a default that is a secret by its shape: ${GH_TOKEN:-ghp_0123456789abcdefABCDEF}", "a default that is a secret by its shape: ${GH_TOKEN:-" + M + "}"},
		{"not a reference: $GITHUB_TOKEN=abc123", "not a reference: $GITHUB_TOKEN=" + M},
		{"${SECRET_VALUE:-s3cr3t-value}", "${SECRET_VALUE:-" + M + "}"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	var zero *Redactor
	if got := zero.String("token=abc ghp_0123456789abcdefABCDEF"); got != "token="+M+" "+M {
		t.Errorf("a nil Redactor still masks shapes: got %q", got)
	}
}

const M = Mask

func TestAddLater(t *testing.T) {
	r := New()
	if got := r.String("value-from-config"); got != "value-from-config" {
		t.Fatalf("masked before Add: %q", got)
	}
	r.Add("value-from-config")
	if got := r.String("value-from-config"); got != M {
		t.Errorf("after Add: %q", got)
	}
}

func TestError(t *testing.T) {
	r := New("s3cr3t-value")
	base := fmt.Errorf("reading: %w", fs.ErrNotExist)
	err := r.Error(fmt.Errorf("upstream: s3cr3t-value: %w", base))
	if strings.Contains(err.Error(), "s3cr3t") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Error = %q, Is(ErrNotExist) = %v", err, errors.Is(err, fs.ErrNotExist))
	}
	if r.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
	if again := r.Error(err); again != err {
		t.Error("a redacted error is wrapped again")
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	r := New("s3cr3t-value")
	log := slog.New(Handler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}), r))
	log = log.With("upstream", "gh", "token", "s3cr3t-value")
	log.WithGroup("g").Debug("calling http://u:pw@h/x?k=s3cr3t-value",
		"error", errors.New("refused s3cr3t-value"),
		"list", []string{"a", "s3cr3t-value"},
		"n", 3,
		slog.Group("inner", "v", "s3cr3t-value"))
	out := buf.String()
	if strings.Contains(out, "s3cr3t") || strings.Contains(out, "pw@") {
		t.Errorf("a secret reached the log: %s", out)
	}
	for _, want := range []string{"upstream=gh", "g.n=3", "refused " + M, "http://" + M + "@h/x?k=" + M} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
}
