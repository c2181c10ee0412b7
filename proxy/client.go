package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/upstream"
)

// A 2026-07-28 client is asked through the request's input_required result (see bridge).

// CreateMessage asks the client of the caller's session to sample its LLM, for an upstream
// server serving that caller (upstream.Client).
func (s *Server) CreateMessage(caller context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	if rt := roundTripOf(caller); rt != nil {
		return rt.sample(caller, req)
	}
	return s.mcp.RequestSampling(caller, req)
}

// Elicit asks the user of the caller's session for input, for an upstream server serving
// that caller (upstream.Client).
func (s *Server) Elicit(caller context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if rt := roundTripOf(caller); rt != nil {
		return rt.elicit(caller, req)
	}
	return s.mcp.RequestElicitation(caller, req)
}

// ListRoots asks the client of the caller's session for its roots, for an upstream server
// serving that caller (upstream.Client).
func (s *Server) ListRoots(caller context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	if rt := roundTripOf(caller); rt != nil {
		return rt.roots(caller)
	}
	return s.mcp.RequestRoots(caller, req)
}

// Log passes an upstream server's log message to the caller's session, subject to the level
// that session set (upstream.Client).
func (s *Server) Log(caller context.Context, params json.RawMessage) {
	var n mcp.LoggingMessageNotification
	if err := json.Unmarshal(params, &n.Params); err != nil {
		return
	}
	n.Method = string(mcp.MethodNotificationMessage)
	if s.mcp.SendLogMessageToClient(caller, n) == nil {
		s.sessionFrom(caller).forwarded.Add(1)
	}
}

var _ upstream.Client = (*Server)(nil)

// ResourceUpdated passes an upstream's notifications/resources/updated to every session
// subscribed to the resource (upstream.Client).
func (s *Server) ResourceUpdated(params json.RawMessage) {
	var p map[string]any
	if json.Unmarshal(params, &p) != nil {
		return
	}
	uri, _ := p["uri"].(string)
	s.sessionsMu.Lock() // before each session.mu (see session)
	var subscribed []*session
	for _, sess := range s.sessions {
		sess.mu.Lock()
		if sess.subs[uri] {
			subscribed = append(subscribed, sess)
		}
		sess.mu.Unlock()
	}
	s.sessionsMu.Unlock()
	for _, sess := range subscribed {
		if err := sess.conn.Notify(context.Background(), string(mcp.MethodNotificationResourceUpdated), p); err != nil {
			s.log.Debug("resource update not delivered", "session", sess.id, "uri", uri, "error", err)
		}
	}
}
