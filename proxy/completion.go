package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// completer forwards completion/complete to the server of the prompt or template.
type completer struct{ s *Server }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, p := range c.s.ups.Catalog().Prompts {
		if p.Exposed == name {
			return c.complete(ctx, p.Server, map[string]any{"type": "ref/prompt", "name": p.Name}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	for _, r := range c.s.ups.Catalog().Resources {
		if r.URI == uri {
			return c.complete(ctx, r.Server, map[string]any{"type": "ref/resource", "uri": uri}, arg, cctx)
		}
	}
	return &mcp.Completion{Values: []string{}}, nil
}

func (c completer) complete(ctx context.Context, serverName string, ref map[string]any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	params := map[string]any{"ref": ref, "argument": arg}
	if len(cctx.Arguments) > 0 {
		params["context"] = cctx
	}
	raw, err := c.s.ups.Request(c.s.asOwner(ctx), serverName, "completion/complete", params)
	if err != nil {
		return nil, err
	}
	var res struct {
		Completion mcp.Completion `json:"completion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("upstream %q: completion/complete: %w", serverName, err)
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	return &res.Completion, nil
}
