package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/upstream"
)

// getPrompt forwards prompts/get to the prompt's server under its own name.
func (s *Server) getPrompt(p upstream.Prompt) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		params := map[string]any{"name": p.Name}
		if req.Params.Arguments != nil {
			params["arguments"] = req.Params.Arguments
		}
		if !s.serverAdmits(s.sessionFrom(ctx).who(), p.Server) {
			return nil, fmt.Errorf("prompt %q not found", req.Params.Name)
		}
		if stable(ctx) {
			out, asks, err := s.bridge.run(ctx, s.sessionFrom(ctx).who(), "prompts/get "+req.Params.Name, req.Params.MultiRoundTripParams, nil, func(ctx context.Context) (any, error) {
				return s.ups.Request(s.asOwner(ctx), p.Server, "prompts/get", params)
			})
			if asks != nil {
				return &mcp.GetPromptResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired}, MultiRoundTripResult: *asks}, nil
			}
			if err != nil {
				return nil, err
			}
			raw, _ := out.(json.RawMessage)
			return mcp.ParseGetPromptResult(&raw)
		}
		raw, err := s.ups.Request(s.asOwner(ctx), p.Server, "prompts/get", params)
		if err != nil {
			return nil, err
		}
		return mcp.ParseGetPromptResult(&raw)
	}
}
