// Package embedtest is a fake OpenAI-compatible embeddings API for tests. Its vectors are
// deterministic and mean something: each dimension is a concept, counted by the words that
// express it, so that "lodge a complaint" is near "Create a new issue" while sharing no word
// with it. It can also misbehave in each of the ways a real API does.
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
	"unicode"
)

// Concepts are the fake model's dimensions after the first (a constant, so that no vector is
// zero): each counts the words of a text that are in its list.
var Concepts = [][]string{
	{"issue", "issues", "bug", "bugs", "ticket", "tickets", "complaint", "complaints", "defect", "grievance"},
	{"create", "new", "lodge", "make", "raise"},
	{"list", "enumerate", "every"},
	{"message", "messages", "send", "post", "chat", "tell", "notify"},
	{"read", "contents", "peek", "skim"},
	{"file", "files", "paper", "papers"},
	{"pull", "merge", "review", "branch"},
	{"search", "find", "hunt", "query"},
	{"screenshot", "picture", "snapshot", "capture"},
	{"page", "browser", "website", "tab"},
}

// Mode is how the fake answers.
type Mode int

// Modes.
const (
	OK         Mode = iota
	Slow            // answers nothing until the request is cancelled, or 30 s
	Status500       // 500 with an OpenAI error body
	BadJSON         // 200 with a body that is not JSON
	WrongCount      // one vector fewer than inputs (none for one input)
	WrongDim        // vectors of one dimension more than the texts'
	MixedDims       // the last vector one dimension short
	NaN             // a NaN in the first vector (not JSON either)
	Overflow        // a value too big for float32
	Empty           // an empty first vector
	Zeros           // a first vector of zeros
	BadIndex        // the first vector's index out of range
)

// Server is the fake API: POST /v1/embeddings. Its zero Mode is OK.
type Server struct {
	*httptest.Server
	// Dim, if above len(Concepts)+1, adds dimensions that hash the words no concept has,
	// weakly, for benchmarks of realistic width. Set it before the first request.
	Dim int

	mu       sync.Mutex // guards the fields below
	mode     Mode
	refuse   string
	requests int
	inputs   []string
	auth     []string
}

// New starts a fake API; it is closed when the test ends. Its base URL is URL + "/v1".
func New(t interface{ Cleanup(func()) }) *Server {
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Base is the base URL to configure: URL + "/v1".
func (s *Server) Base() string { return s.URL + "/v1" }

// SetMode sets how every later request is answered.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// Refuse makes the fake answer 400, as an API does to an input too long, to every later
// request with an input that contains word; "" refuses none.
func (s *Server) Refuse(word string) {
	s.mu.Lock()
	s.refuse = word
	s.mu.Unlock()
}

// Requests returns how many requests were made, and every input embedded (or asked for,
// in a mode that fails), in order.
func (s *Server) Requests() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, append([]string(nil), s.inputs...)
}

// Authorization returns the Authorization header of every request.
func (s *Server) Authorization() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error": {"message": "not found"}}`, http.StatusNotFound)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
		http.Error(w, `{"error": {"message": "want {model, input: [...]}"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	mode, refuse := s.mode, s.refuse
	s.requests++
	s.inputs = append(s.inputs, req.Input...)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	s.mu.Unlock()

	for _, in := range req.Input {
		if refuse != "" && strings.Contains(in, refuse) {
			http.Error(w, `{"error": {"message": "this model's maximum context length is 512 tokens"}}`, http.StatusBadRequest)
			return
		}
	}
	vecs := make([][]float32, len(req.Input))
	for i, in := range req.Input {
		vecs[i] = s.Vector(in)
	}
	switch mode {
	case Slow:
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
		return
	case Status500:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error": {"message": "the model is overloaded"}}`)
		return
	case BadJSON:
		fmt.Fprint(w, `{"data": [{"embedding": [0.1, 0.2`)
		return
	case NaN:
		fmt.Fprint(w, `{"data": [{"embedding": [NaN, 1], "index": 0}]}`)
		return
	case Overflow:
		fmt.Fprint(w, `{"data": [{"embedding": [1e39, 1], "index": 0}]}`)
		return
	case WrongCount:
		vecs = vecs[:len(vecs)-1]
	case WrongDim:
		for i := range vecs {
			vecs[i] = append(vecs[i], 1)
		}
	case MixedDims:
		if n := len(vecs) - 1; n > 0 {
			vecs[n] = vecs[n][:len(vecs[n])-1]
		} else {
			vecs = append(vecs, vecs[0][:len(vecs[0])-1])
		}
	case Empty:
		vecs[0] = []float32{}
	case Zeros:
		vecs[0] = make([]float32, len(vecs[0]))
	}
	type datum struct {
		Object    string    `json:"object"`
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []datum `json:"data"`
		Model  string  `json:"model"`
	}{Object: "list", Model: req.Model, Data: []datum{}}
	// Answered in reverse, as a server may: the index, not the order, says which is which.
	for i := len(vecs) - 1; i >= 0; i-- {
		out.Data = append(out.Data, datum{Object: "embedding", Embedding: vecs[i], Index: i})
	}
	if mode == BadIndex {
		out.Data[0].Index = len(vecs) + 3
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// Vector is the fake model's vector of a text.
func (s *Server) Vector(text string) []float32 {
	v := make([]float32, max(s.Dim, len(Concepts)+1))
	v[0] = 0.1
	extra := len(v) - len(Concepts) - 1
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		found := false
		for c, words := range Concepts {
			for _, cw := range words {
				if w == cw {
					v[1+c]++
					found = true
				}
			}
		}
		if !found && extra > 0 {
			h := fnv.New32a()
			h.Write([]byte(w))
			v[1+len(Concepts)+int(h.Sum32()%uint32(extra))] += 0.05
		}
	}
	return v
}
