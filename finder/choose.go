package finder

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/toolsift/toolsift/search"
	"github.com/toolsift/toolsift/upstream"
)

// Chooser asks a model to choose: given a system prompt, a prompt and a bound on the
// answer's tokens, it returns the model's answer. tool_search's asks the client's model
// through MCP sampling, so that toolsift needs no model of its own and the client keeps its
// approval flow.
type Chooser func(ctx context.Context, system, prompt string, maxTokens int) (string, error)

// Choosing, as a last resort when the words are unsure.
const (
	// choiceCandidates is how many of the word ranking's best the model chooses among: few
	// enough for a short prompt, enough to hold the right tool when the words are unsure.
	choiceCandidates = 8
	// choiceAllUnder: with nothing matched, a catalog this small is offered whole.
	choiceAllUnder = 30
	// choiceMaxTokens caps the answer: a few numbers.
	choiceMaxTokens = 32
	// closeScores: the words are unsure when the second best scores at least this share of
	// the best.
	closeScores = 0.9
)

const choicePrompt = "You pick tools for a request. Answer only with the numbers of the tools that serve it, " +
	"best first, separated by commas (for example: 3,1). Answer 0 if none does."

// unsure reports whether a word ranking leaves the choice open: nothing matched, or the best
// two scores are within closeScores of each other.
func unsure(hits []search.Hit) bool {
	return len(hits) == 0 || len(hits) > 1 && hits[1].Score >= closeScores*hits[0].Score
}

// choose asks req.Choose which of the best candidates serve the query, and returns the
// candidates with its choices first, in its order, then the others as they were. It
// returns nil when it did not ask, or the answer named none: the ranking stands then.
func (f *Finder) choose(ctx context.Context, req Request, cat *upstream.Catalog, ranked []Hit) []Hit {
	cands := slices.Clone(ranked[:min(len(ranked), choiceCandidates)])
	// With nothing ranked, a small catalog is offered whole; then only the model's picks are
	// matches, not the tools it passed over.
	whole := len(cands) == 0
	if whole && len(cat.Tools) <= choiceAllUnder {
		for _, t := range cat.Tools {
			cands = append(cands, Hit{Tool: t})
		}
	}
	if len(cands) < 2 {
		return nil // nothing to choose between
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Request: %s\n\nTools:\n", req.Text)
	for i, h := range cands {
		fmt.Fprintf(&b, "%d. %s: %s\n", i+1, h.Tool.Exposed, search.FirstLine(h.Tool.Description, 200))
	}
	answer, err := req.Choose(ctx, choicePrompt, b.String(), choiceMaxTokens)
	if err != nil {
		return nil
	}
	chosen := choices(answer, len(cands))
	if len(chosen) == 0 {
		return nil
	}
	out := make([]Hit, 0, len(cands))
	for _, i := range chosen {
		h := cands[i]
		h.Why = ByModel
		out = append(out, h)
	}
	if whole {
		return out
	}
	for i, h := range cands {
		if !slices.Contains(chosen, i) {
			out = append(out, h)
		}
	}
	return out
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
