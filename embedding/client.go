// Package embedding ranks tools by meaning: it turns tool descriptions and queries into
// vectors with an OpenAI-compatible embeddings API, keeps the tools' vectors on disk, and
// fuses the ranking by meaning with search's ranking by words (see Hybrid). It is optional
// and never in the way: a search that cannot have its query's vector in time, or whose
// tools have none yet, ranks by words alone.
package embedding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
)

// maxAnswerBytes bounds an answer of the embeddings API: a batch of 64 vectors of 3,072
// dimensions is about 4 MiB as JSON.
const maxAnswerBytes = 64 << 20

// Client calls an OpenAI-compatible embeddings API. It is safe for concurrent use.
type Client struct {
	endpoint string
	model    string
	apiKey   string
	http     *http.Client
}

// NewClient returns a client of the API at base (such as https://api.openai.com/v1): it
// POSTs to base + "/embeddings". apiKey, if not empty, is sent as a bearer token; hc nil
// means http.DefaultClient. Callers bound each call with its context.
func NewClient(base, model, apiKey string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{endpoint: endpoint(base), model: model, apiKey: apiKey, http: hc}
}

// endpoint is base with /embeddings added to its path; a query (some gateways take the key
// as ?key=…) stays the query.
func endpoint(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimRight(base, "/") + "/embeddings"
	}
	return u.JoinPath("embeddings").String()
}

// Embed returns one vector per input, in the order of inputs. Every answer is checked, since
// a vector that is wrong ranks silently wrong: an HTTP error, an answer that is not JSON, a
// count or an index that does not match the inputs, an empty vector, vectors of different
// lengths, a value that is not finite, and a vector of zeros are all errors.
func (c *Client) Embed(ctx context.Context, inputs []string) ([][]float32, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}{c.model, inputs})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, fmt.Errorf("embeddings: reading the answer: %w", err)
	}
	if len(data) > maxAnswerBytes {
		return nil, fmt.Errorf("embeddings: the answer is over %d MiB", maxAnswerBytes>>20)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("embeddings: %s: %s", resp.Status, apiError(data))
	}
	var answer struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
			Index     *int      `json:"index"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &answer); err != nil {
		return nil, fmt.Errorf("embeddings: the answer is not the API's JSON: %w", err)
	}
	if len(answer.Data) != len(inputs) {
		return nil, fmt.Errorf("embeddings: %d vectors for %d inputs", len(answer.Data), len(inputs))
	}
	out := make([][]float32, len(inputs))
	for i, d := range answer.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		switch {
		case at < 0 || at >= len(inputs):
			return nil, fmt.Errorf("embeddings: vector %d has index %d, for %d inputs", i, at, len(inputs))
		case out[at] != nil:
			return nil, fmt.Errorf("embeddings: two vectors have index %d", at)
		}
		if err := check(d.Embedding); err != nil {
			return nil, fmt.Errorf("embeddings: vector %d: %w", at, err)
		}
		if dim := len(answer.Data[0].Embedding); len(d.Embedding) != dim {
			return nil, fmt.Errorf("embeddings: vector %d has %d dimensions, another %d", at, len(d.Embedding), dim)
		}
		out[at] = d.Embedding
	}
	return out, nil
}

// check reports what is wrong with a vector: empty, not finite, or all zeros (which has no
// direction to compare).
func check(v []float32) error {
	if len(v) == 0 {
		return errors.New("empty")
	}
	var norm float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("a value is not finite")
		}
		norm += f * f
	}
	if norm == 0 {
		return errors.New("all zeros")
	}
	return nil
}

// apiError extracts the message of an error answer: OpenAI's {"error": {"message"}}, or
// the first 200 bytes of whatever it was.
func apiError(data []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(data))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "no message"
	}
	return s
}
