package embedding

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/toolsift/toolsift/internal/embedtest"
)

func TestEmbed(t *testing.T) {
	api := embedtest.New(t)
	c := NewClient(api.Base()+"/", "fake", "", nil)
	inputs := []string{"create a new issue", "send a message", "read a file"}
	vs, err := c.Embed(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	// The fake answers in reverse order: the index says which is which.
	for i, in := range inputs {
		if !reflect.DeepEqual(vs[i], api.Vector(in)) {
			t.Errorf("vector %d = %v, want %v", i, vs[i], api.Vector(in))
		}
	}
	if vs, err := c.Embed(context.Background(), nil); vs != nil || err != nil {
		t.Errorf("Embed(nil) = %v, %v; want nothing, and no request", vs, err)
	}
}

// TestEmbedRejectsGarbage: every answer that is not one good vector per input is an error
// that says what was wrong.
func TestEmbedRejectsGarbage(t *testing.T) {
	tests := []struct {
		mode embedtest.Mode
		want string
	}{
		{embedtest.Status500, "500 Internal Server Error: the model is overloaded"},
		{embedtest.BadJSON, "not the API's JSON"},
		{embedtest.NaN, "not the API's JSON"},
		{embedtest.Overflow, "not the API's JSON"},
		{embedtest.WrongCount, "2 vectors for 3 inputs"},
		{embedtest.MixedDims, "has 11 dimensions, another 10"},
		{embedtest.Empty, "vector 0: empty"},
		{embedtest.Zeros, "vector 0: all zeros"},
		{embedtest.BadIndex, "has index 6, for 3 inputs"},
	}
	api := embedtest.New(t)
	c := NewClient(api.Base(), "fake", "", nil)
	for _, tt := range tests {
		api.SetMode(tt.mode)
		vs, err := c.Embed(context.Background(), []string{"a", "b", "c"})
		if err == nil || !strings.Contains(err.Error(), tt.want) || vs != nil {
			t.Errorf("mode %d: Embed = %v, %v; want an error containing %q", tt.mode, vs, err, tt.want)
		}
	}
}

// TestEmbedHostileAnswers: answers no fake mode makes.
func TestEmbedHostileAnswers(t *testing.T) {
	tests := []struct {
		name, status, body, want string
	}{
		{"duplicate index", "200", `{"data": [{"embedding": [1], "index": 0}, {"embedding": [1], "index": 0}]}`, "two vectors have index 0"},
		{"negative index", "200", `{"data": [{"embedding": [1], "index": -1}, {"embedding": [1], "index": 0}]}`, "index -1"},
		{"no data", "200", `{"object": "list"}`, "0 vectors for 2 inputs"},
		{"data not a list", "200", `{"data": {"embedding": [1]}}`, "not the API's JSON"},
		{"strings for numbers", "200", `{"data": [{"embedding": ["1"]}, {"embedding": ["1"]}]}`, "not the API's JSON"},
		{"html error page", "502", `<html><body>Bad Gateway</body></html>`, "502 Bad Gateway: <html>"},
		{"empty error", "401", ``, "401 Unauthorized: no message"},
		{"openai error", "401", `{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}`, "401 Unauthorized: Incorrect API key provided"},
		{"base64 answer", "200", `{"data": [{"embedding": "AAAA", "index": 0}, {"embedding": "AAAA", "index": 1}]}`, "not the API's JSON"},
		{"huge error", "500", strings.Repeat("x", 5000), "500 Internal Server Error: xxx"},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var code int
			fmt.Sscan(tt.status, &code)
			w.WriteHeader(code)
			fmt.Fprint(w, tt.body)
		}))
		_, err := NewClient(srv.URL, "m", "", nil).Embed(context.Background(), []string{"a", "b"})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Embed error = %v, want one containing %q", tt.name, err, tt.want)
		} else if len(err.Error()) > 300 {
			t.Errorf("%s: error of %d bytes: %.80s…", tt.name, len(err.Error()), err)
		}
	}
}

func TestCheck(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	for _, tt := range []struct {
		v    []float32
		want string
	}{
		{[]float32{1, 0}, ""},
		{[]float32{-1e-30, 0}, ""},
		{nil, "empty"},
		{[]float32{0, 0}, "all zeros"},
		{[]float32{1, nan}, "not finite"},
		{[]float32{inf, 1}, "not finite"},
	} {
		err := check(tt.v)
		if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("check(%v) = %v, want %q", tt.v, err, tt.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	tests := []struct{ base, want string }{
		{"https://api.openai.com/v1", "https://api.openai.com/v1/embeddings"},
		{"https://api.openai.com/v1/", "https://api.openai.com/v1/embeddings"},
		{"http://h/v1?key=K", "http://h/v1/embeddings?key=K"},
		{"http://user:pw@h:8080/a%2Fb/v1?key=K&x=1", "http://user:pw@h:8080/a%2Fb/v1/embeddings?key=K&x=1"},
		{"http://h", "http://h/embeddings"},
	}
	for _, tt := range tests {
		if got := endpoint(tt.base); got != tt.want {
			t.Errorf("endpoint(%q) = %q, want %q", tt.base, got, tt.want)
		}
	}
}
