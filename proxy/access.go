package proxy

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/internal/identity"
)

// A server's access rules cover its prompts and resources too: what a caller may not use
// does not exist for them. A tool's own rules have no prompt or resource to cover.

// serverAdmits reports whether u may use the named server's prompts and resources.
func (s *Server) serverAdmits(u identity.User, server string) bool {
	return u.Kind == identity.Local || s.admitsServers(u)(server)
}

// admitsServers returns whether u may use each server's prompts and resources, from the
// servers' statuses read once.
func (s *Server) admitsServers(u identity.User) func(server string) bool {
	admitted := map[string]bool{}
	for _, st := range s.ups.Statuses() {
		admitted[st.Name] = st.Admits(u)
	}
	return func(server string) bool { return admitted[server] }
}

// listFilter returns, for the request's session, whether the prompt or resource a server
// listed under name may be listed; nil for the local user, who may list all. The servers
// are told apart by the catalog: the first that listed a name, as they are registered.
func (s *Server) listFilter(ctx context.Context) (prompt, resource func(name string) bool) {
	u := s.sessionFrom(ctx).who()
	if u.Kind == identity.Local {
		return nil, nil
	}
	admits := s.admitsServers(u)
	prompts, resources := map[string]string{}, map[string]string{}
	cat := s.ups.Catalog()
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
	return func(name string) bool { return admits(prompts[name]) }, func(uri string) bool { return admits(resources[uri]) }
}

func (s *Server) afterListPrompts(ctx context.Context, _ any, _ *mcp.ListPromptsRequest, result *mcp.ListPromptsResult) {
	if prompt, _ := s.listFilter(ctx); prompt != nil {
		result.Prompts = slices.DeleteFunc(result.Prompts, func(p mcp.Prompt) bool { return !prompt(p.Name) })
	}
}

func (s *Server) afterListResources(ctx context.Context, _ any, _ *mcp.ListResourcesRequest, result *mcp.ListResourcesResult) {
	if _, resource := s.listFilter(ctx); resource != nil {
		result.Resources = slices.DeleteFunc(result.Resources, func(r mcp.Resource) bool { return !resource(r.URI) })
	}
}

func (s *Server) afterListResourceTemplates(ctx context.Context, _ any, _ *mcp.ListResourceTemplatesRequest, result *mcp.ListResourceTemplatesResult) {
	if _, resource := s.listFilter(ctx); resource != nil {
		result.ResourceTemplates = slices.DeleteFunc(result.ResourceTemplates, func(r mcp.ResourceTemplate) bool {
			return r.URITemplate == nil || !resource(r.URITemplate.Raw())
		})
	}
}
