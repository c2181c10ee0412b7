package upstream

import (
	"context"
	"encoding/json"
	"fmt"
)

// Prompt is an upstream prompt, kept as the server sent it.
type Prompt struct {
	Server string
	// Name is the prompt's name at its server; Exposed is the name clients see, made like a
	// tool's (see ExposedName).
	Name, Exposed string
	Raw           json.RawMessage
}

// Resource is an upstream resource, or a resource template, kept as the server sent it.
// URIs are shown to clients unchanged: a URI names the same thing whoever serves it.
type Resource struct {
	Server string
	// URI is the resource's URI, or the template's URI template.
	URI      string
	Template bool
	Raw      json.RawMessage
}

// listExtras lists a server's prompts, resources and resource templates, as far as its
// capabilities say it has them. A server that fails one of these lists keeps its tools.
func (p *Pool) listExtras(ctx context.Context, s *server, conn Conn, info Info) (prompts []Prompt, resources []Resource) {
	if info.Prompts {
		raws, err := listPages(ctx, conn, "prompts/list", "prompts")
		if err != nil {
			s.log.Warn("upstream prompts not listed", "error", err)
		}
		prompts = s.promptsFrom(raws)
	}
	if info.Resources {
		for _, l := range []struct {
			method, field, key string
			template           bool
		}{
			{"resources/list", "resources", "uri", false},
			{"resources/templates/list", "resourceTemplates", "uriTemplate", true},
		} {
			raws, err := listPages(ctx, conn, l.method, l.field)
			if err != nil {
				s.log.Warn("upstream resources not listed", "method", l.method, "error", err)
			}
			for _, raw := range raws {
				var r map[string]json.RawMessage
				var uri string
				if json.Unmarshal(raw, &r) == nil && json.Unmarshal(r[l.key], &uri) == nil && uri != "" {
					resources = append(resources, Resource{Server: s.cfg.Name, URI: uri, Template: l.template, Raw: raw})
				}
			}
		}
	}
	return prompts, resources
}

// promptsFrom turns a server's raw prompts, listed or cached, into catalog prompts.
func (s *server) promptsFrom(raws []json.RawMessage) []Prompt {
	var prompts []Prompt
	for _, raw := range raws {
		var pr struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &pr) == nil && pr.Name != "" {
			prompts = append(prompts, Prompt{Server: s.cfg.Name, Name: pr.Name, Raw: raw})
		}
	}
	return prompts
}

// Request sends a request to the named server and returns its raw result.
func (p *Pool) Request(ctx context.Context, serverName, method string, params any) (json.RawMessage, error) {
	s, ok := p.byName[serverName]
	if !ok {
		return nil, fmt.Errorf("no server %q", serverName)
	}
	res, err := p.request(ctx, s, method, params)
	if err != nil {
		return nil, fmt.Errorf("upstream %q: %s: %w", serverName, method, err)
	}
	// Subscriptions are remembered, to be renewed when the server restarts, and a server
	// holding any is not stopped when idle: its updates would be lost.
	if method == "resources/subscribe" || method == "resources/unsubscribe" {
		var sub struct {
			URI string `json:"uri"`
		}
		b, _ := json.Marshal(params)
		if json.Unmarshal(b, &sub) == nil && sub.URI != "" {
			s.mu.Lock()
			if method == "resources/subscribe" {
				if s.subs == nil {
					s.subs = map[string]bool{}
				}
				s.subs[sub.URI] = true
			} else {
				delete(s.subs, sub.URI)
			}
			s.mu.Unlock()
		}
	}
	return res, nil
}
