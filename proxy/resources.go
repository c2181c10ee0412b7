package proxy

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// readResource forwards resources/read to the server that listed the resource or template.
func (s *Server) readResource(serverName string) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		if !s.serverAdmits(s.sessionFrom(ctx).who(), serverName) {
			return nil, fmt.Errorf("resource %q not found", req.Params.URI)
		}
		raw, err := s.ups.Request(s.asOwner(ctx), serverName, "resources/read", map[string]any{"uri": req.Params.URI})
		if err != nil {
			return nil, err
		}
		res, err := mcp.ParseReadResourceResult(&raw)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: resources/read: %w", serverName, err)
		}
		return res.Contents, nil
	}
}

// subscribe records sess's subscription to uri and subscribes upstream on the first one.
func (s *Server) subscribe(ctx context.Context, sess *session, uri string) {
	sess.mu.Lock()
	already := sess.subs[uri]
	if sess.subs == nil {
		sess.subs = map[string]bool{}
	}
	sess.subs[uri] = true
	sess.mu.Unlock()
	if already {
		return
	}
	s.subscribersMu.Lock()
	s.subscribers[uri]++
	first := s.subscribers[uri] == 1
	s.subscribersMu.Unlock()
	if first {
		s.forwardSubscription(ctx, "resources/subscribe", uri)
	}
}

// unsubscribe drops sess's subscription to uri and unsubscribes upstream after the last.
func (s *Server) unsubscribe(ctx context.Context, sess *session, uri string) {
	sess.mu.Lock()
	had := sess.subs[uri]
	delete(sess.subs, uri)
	sess.mu.Unlock()
	if !had {
		return
	}
	s.subscribersMu.Lock()
	s.subscribers[uri]--
	last := s.subscribers[uri] <= 0
	if last {
		delete(s.subscribers, uri)
	}
	s.subscribersMu.Unlock()
	if last {
		s.forwardSubscription(ctx, "resources/unsubscribe", uri)
	}
}

// forwardSubscription sends a subscribe or unsubscribe to the server that owns uri, directly
// or through one of its templates.
func (s *Server) forwardSubscription(ctx context.Context, method, uri string) {
	owner := ""
	for _, r := range s.ups.Catalog().Resources {
		if r.URI == uri || r.Template && matchesTemplate(r.URI, uri) {
			owner = r.Server
			break
		}
	}
	if owner == "" {
		s.log.Warn("resource subscription not forwarded: no server lists it", "uri", uri)
		return
	}
	if _, err := s.ups.Request(context.WithoutCancel(ctx), owner, method, map[string]string{"uri": uri}); err != nil {
		s.log.Warn("resource subscription not forwarded", "upstream", owner, "method", method, "uri", uri, "error", err)
	}
}

// matchesTemplate reports whether uri fits an RFC 6570 level-1 template: literal text must
// match, and each {variable} stands for one or more characters other than "/".
func matchesTemplate(template, uri string) bool {
	var b strings.Builder
	b.WriteString("^")
	for {
		open := strings.IndexByte(template, '{')
		if open < 0 {
			b.WriteString(regexp.QuoteMeta(template))
			break
		}
		end := strings.IndexByte(template[open:], '}')
		if end < 0 {
			return false
		}
		b.WriteString(regexp.QuoteMeta(template[:open]))
		b.WriteString(`[^/]+`)
		template = template[open+end+1:]
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(uri)
}
