package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// Asking the client's model (search.sampling: auto), as a last resort when the words are
// unsure: dodo-agentx's HYBRID mode, through MCP sampling so that toolsift needs no model of
// its own, and the client keeps its approval flow.
const (
	// sampledCandidates is how many of the word ranking's best the model chooses among: few
	// enough for a short prompt, enough to hold the right tool when the words are unsure.
	sampledCandidates = 8
	// sampledAllUnder: with nothing matched, a catalog this small is offered whole.
	sampledAllUnder = 30
	// sampledMaxTokens caps the answer: a few numbers.
	sampledMaxTokens = 32
	// closeScores: the words are unsure when the second best scores at least this share of
	// the best.
	closeScores = 0.9
)

const samplingPrompt = "You pick tools for a request. Answer only with the numbers of the tools that serve it, " +
	"best first, separated by commas (for example: 3,1). Answer 0 if none does."

// unsure reports whether a word ranking leaves the choice open: nothing matched, or the best
// two scores are within closeScores of each other.
func unsure(hits []search.Hit) bool {
	return len(hits) == 0 || len(hits) > 1 && hits[1].Score >= closeScores*hits[0].Score
}

// asksModel reports whether an unsure search of the session may ask its client's model.
func (s *Server) asksModel(sess *session) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	// Over stdio only: mcp-go queues a streamable HTTP session's sampling request for a GET
	// stream the client may never open, and the search would wait out SamplingTimeout.
	return s.opts.Sampling && sess.samples && sess.watched
}

// sampled asks the client's model which of the best candidates serve query, and returns the
// candidates' names with its choices first, in its order, then the others as they were. It
// returns nil when it did not ask, or the answer named none: the ranking stands then.
func (s *Server) sampled(ctx context.Context, sess *session, query string, cat *upstream.Catalog, ranked []string) []string {
	names := slices.Clone(ranked[:min(len(ranked), sampledCandidates)])
	// With nothing ranked, a small catalog is offered whole; then only the model's picks are
	// matches, not the tools it passed over.
	whole := len(names) == 0
	if whole && len(cat.Tools) <= sampledAllUnder {
		for _, t := range cat.Tools {
			names = append(names, t.Exposed)
		}
	}
	if len(names) < 2 {
		return nil // nothing to choose between
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Request: %s\n\nTools:\n", query)
	for i, n := range names {
		t, _ := cat.Lookup(n)
		fmt.Fprintf(&b, "%d. %s: %s\n", i+1, n, FirstLine(t.Description, 200))
	}
	req := mcp.CreateMessageRequest{}
	req.CreateMessageParams = mcp.CreateMessageParams{
		Messages:       []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(b.String())}},
		SystemPrompt:   samplingPrompt,
		IncludeContext: "none",
		MaxTokens:      sampledMaxTokens,
		ModelPreferences: &mcp.ModelPreferences{
			SpeedPriority: 1, CostPriority: 1, IntelligencePriority: 0.3,
		},
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.SamplingTimeout)
	defer cancel()
	start := time.Now()
	res, err := s.mcp.RequestSampling(ctx, req)
	log := s.log.With("session", sess.id, "query", query, "candidates", len(names), "duration_ms", time.Since(start).Milliseconds())
	if err != nil {
		log.Warn("search sampling failed; the words stand", "error", err)
		return nil
	}
	chosen := choices(sampledText(res), len(names))
	log.Info("search sampled", "chosen", chosen, "model", res.Model)
	if len(chosen) == 0 {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, i := range chosen {
		out = append(out, names[i])
	}
	if whole {
		return out
	}
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// sampledText is the text of a sampling answer, whatever form its content took.
func sampledText(res *mcp.CreateMessageResult) string {
	if res == nil {
		return ""
	}
	switch c := res.Content.(type) {
	case mcp.TextContent:
		return c.Text
	case *mcp.TextContent:
		return c.Text
	}
	// Content decoded generically (a map, or a list of parts): take every "text" in it.
	raw, _ := json.Marshal(res.Content)
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		var one struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(raw, &one)
		return one.Text
	}
	var texts []string
	for _, p := range parts {
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, " ")
}

// number matches an unsigned whole number: "-1", which models write for none, is none.
var number = regexp.MustCompile(`(?:^|[^-\d])(\d+)`)

// choices reads the model's answer: the 0-based indexes of the numbers it gave, in its
// order, each once, of those within 1..n. "0", or an answer with no usable number, is none.
func choices(answer string, n int) []int {
	var out []int
	for _, m := range number.FindAllStringSubmatch(answer, 10) {
		k, err := strconv.Atoi(m[1])
		if err != nil || k < 1 || k > n || slices.Contains(out, k-1) {
			continue
		}
		out = append(out, k-1)
	}
	return out
}
