package upstream

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
)

// Resource is an upstream resource, or a resource template, kept as the server sent it.
// URIs are shown to clients unchanged: a URI names the same thing whoever serves it.
type Resource struct {
	Server string
	// URI is the resource's URI, or the template's URI template.
	URI      string
	Template bool
	Raw      json.RawMessage
}

// listResources lists the server's resources and resource templates, if its capabilities
// say it has them, and reports whether both lists are whole. A server that fails these
// lists keeps its tools.
func (s *server) listResources(ctx context.Context, conn Conn, info Info) (resources []Resource, whole bool) {
	if !info.Resources {
		return nil, true
	}
	whole = true
	for _, l := range []struct {
		method, field, key string
		template           bool
	}{
		{"resources/list", "resources", "uri", false},
		{"resources/templates/list", "resourceTemplates", "uriTemplate", true},
	} {
		raws, err := listPages(ctx, conn, l.method, l.field)
		if err != nil {
			s.listFailed(ctx, "upstream resources not listed", "method", l.method, "error", err)
			whole = false
		}
		for _, raw := range raws {
			var r map[string]json.RawMessage
			var uri string
			if json.Unmarshal(raw, &r) == nil && json.Unmarshal(r[l.key], &uri) == nil && uri != "" {
				resources = append(resources, Resource{Server: s.cfg.Name, URI: uri, Template: l.template, Raw: raw})
			}
		}
	}
	return resources, whole
}

// trackSubscription remembers the subscription that a resources/subscribe the server
// accepted made, or forgets the one a resources/unsubscribe ended; other methods are no
// concern of it. Subscriptions are remembered to be renewed when the server restarts (see
// resubscribe), and a server holding any is not stopped when idle: its updates would be
// lost.
func (s *server) trackSubscription(method string, params any) {
	if method != "resources/subscribe" && method != "resources/unsubscribe" {
		return
	}
	var sub struct {
		URI string `json:"uri"`
	}
	b, _ := json.Marshal(params)
	if json.Unmarshal(b, &sub) != nil || sub.URI == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if method == "resources/subscribe" {
		if s.subs == nil {
			s.subs = map[string]bool{}
		}
		s.subs[sub.URI] = true
	} else {
		delete(s.subs, sub.URI)
	}
}

// resubscribe renews, on a new connection, the resource subscriptions clients hold: the
// server that crashed or was stopped when idle has forgotten them.
func (s *server) resubscribe(ctx context.Context, conn Conn) {
	s.mu.Lock()
	uris := slices.Sorted(maps.Keys(s.subs))
	s.mu.Unlock()
	for _, uri := range uris {
		if _, err := conn.Request(ctx, "resources/subscribe", map[string]string{"uri": uri}); err != nil {
			s.log.Warn("resource subscription not renewed", "uri", uri, "error", err)
		}
	}
}
