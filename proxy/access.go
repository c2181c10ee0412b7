package proxy

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/upstream"
)

// A server's access rules cover its prompts and resources too: what a caller may not use
// does not exist for them. A tool's own rules have no prompt or resource to cover.

// serverAdmits reports whether u may use the named server's prompts and resources.
func (s *Server) serverAdmits(u identity.User, server string) bool {
	if u.Kind == identity.Local {
		return true
	}
	for _, st := range s.ups.Statuses() {
		if st.Name == server {
			return st.Admits(u)
		}
	}
	return false
}

// servedBy maps each prompt's exposed name, and each resource's URI (or template), to its
// server: the first that listed it, as they are registered.
func servedBy(cat *upstream.Catalog) (prompts, resources map[string]string) {
	prompts, resources = map[string]string{}, map[string]string{}
	for _, p := range cat.Prompts {
		if _, ok := prompts[p.Exposed]; !ok {
			prompts[p.Exposed] = p.Server
		}
	}
	for _, r := range cat.Resources {
		if _, ok := resources[r.URI]; !ok {
			resources[r.URI] = r.Server
		}
	}
	return prompts, resources
}

func (s *Server) afterListPrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, result *mcp.ListPromptsResult) {
	u := s.sessionFrom(ctx).who()
	if u.Kind == identity.Local {
		return
	}
	prompts, _ := servedBy(s.ups.Catalog())
	result.Prompts = slices.DeleteFunc(result.Prompts, func(p mcp.Prompt) bool { return !s.serverAdmits(u, prompts[p.Name]) })
}

func (s *Server) afterListResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
	u := s.sessionFrom(ctx).who()
	if u.Kind == identity.Local {
		return
	}
	_, resources := servedBy(s.ups.Catalog())
	result.Resources = slices.DeleteFunc(result.Resources, func(r mcp.Resource) bool { return !s.serverAdmits(u, resources[r.URI]) })
}

func (s *Server) afterListResourceTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, result *mcp.ListResourceTemplatesResult) {
	u := s.sessionFrom(ctx).who()
	if u.Kind == identity.Local {
		return
	}
	_, resources := servedBy(s.ups.Catalog())
	result.ResourceTemplates = slices.DeleteFunc(result.ResourceTemplates, func(r mcp.ResourceTemplate) bool {
		return r.URITemplate == nil || !s.serverAdmits(u, resources[r.URITemplate.Raw()])
	})
}
