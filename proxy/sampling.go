package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/finder"
)

// asksModel reports whether an unsure search of the session may ask its client's model
// (search.sampling: auto).
func (s *Server) asksModel(sess *session) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return s.opts.Sampling && sess.samples
}

// chooser asks the session's client's model, through MCP sampling, to choose among a
// search's best candidates (see finder.Chooser).
func (s *Server) chooser(sess *session) finder.Chooser {
	return func(ctx context.Context, system, prompt string, maxTokens int) (string, error) {
		req := mcp.CreateMessageRequest{}
		req.CreateMessageParams = mcp.CreateMessageParams{
			Messages:       []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(prompt)}},
			SystemPrompt:   system,
			IncludeContext: "none",
			MaxTokens:      maxTokens,
			ModelPreferences: &mcp.ModelPreferences{
				SpeedPriority: 1, CostPriority: 1, IntelligencePriority: 0.3,
			},
		}
		ctx, cancel := context.WithTimeout(ctx, s.opts.SamplingTimeout)
		defer cancel()
		start := time.Now()
		res, err := sess.conn.Sample(ctx, req)
		log := s.log.With("session", sess.id, "duration_ms", time.Since(start).Milliseconds())
		if errors.Is(err, errors.ErrUnsupported) {
			return "", err // the transport cannot ask: the words stand
		}
		if err != nil {
			log.Warn("search sampling failed; the words stand", "error", err)
			return "", err
		}
		answer := sampledText(res)
		log.Info("search sampled", "answer", answer, "model", res.Model)
		return answer, nil
	}
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
