package proxy

import (
	"context"
	"fmt"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/finder"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/upstream"
)

// SignIn makes the links with which the people of a shared service sign in to the servers
// they act on as themselves (signin.Pages).
type SignIn interface {
	// Link returns a sign-in link for u to sign in to server, and its ID.
	Link(u identity.User, server string) (url, id string, err error)
}

// signInText says how the session's user signs in to server, with a link where there can
// be one; the link is also returned ("" without one), with its ID.
func (s *Server) signInText(sess *session, server string) (text, url, id string) {
	text = fmt.Sprintf("%s needs you to sign in to it yourself: each person acts on it as themselves.", server)
	if s.opts.SignIn == nil {
		return text + " Sign-in links need auth.oidc.clientId in toolsift's configuration: ask whoever runs toolsift to set it.", "", ""
	}
	url, id, err := s.opts.SignIn.Link(sess.who(), server)
	if err != nil {
		return text + " " + err.Error() + ".", "", ""
	}
	return text + " Open this link in your browser to sign in, then call the tool again: " + url, url, id
}

// signInResult answers a call that needs the caller's own sign-in to server. A client that
// declared URL elicitation is sent the link as one too, which it shows its user.
func (s *Server) signInResult(ctx context.Context, sess *session, server string) *mcp.CallToolResult {
	text, url, id := s.signInText(sess, server)
	sess.mu.Lock()
	asks := sess.urlElicit
	sess.mu.Unlock()
	if url != "" && asks {
		s.elicitedMu.Lock()
		s.elicited[id] = sess.id
		s.elicitedMu.Unlock()
		req := mcp.ElicitationRequest{Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
			Params: mcp.ElicitationParams{Mode: mcp.ElicitationModeURL, ElicitationID: id, URL: url,
				Message: fmt.Sprintf("Sign in to %s: toolsift acts on it as you.", server)}}
		if res, err := s.mcp.RequestElicitation(ctx, req); err != nil {
			s.log.Debug("sign-in link not sent as an elicitation", "session", sess.id, "error", err)
		} else if res.Action == mcp.ElicitationResponseActionAccept {
			text = fmt.Sprintf("%s needs you to sign in to it yourself; the sign-in page was opened for you. Once you have signed in, call the tool again. (The link, if it did not open: %s)", server, url)
		}
	}
	return errorResult("%s", text)
}

// SignedIn tells the session that was sent the sign-in link id, as an elicitation, that
// the sign-in is done.
func (s *Server) SignedIn(id string) {
	s.elicitedMu.Lock()
	sid, ok := s.elicited[id]
	delete(s.elicited, id)
	s.elicitedMu.Unlock()
	if !ok {
		return
	}
	s.sessionsMu.Lock()
	sess := s.sessions[sid]
	s.sessionsMu.Unlock()
	if sess == nil {
		return
	}
	if err := sess.conn.Notify(context.Background(), string(mcp.MethodNotificationElicitationComplete), map[string]any{"elicitationId": id}); err != nil {
		s.log.Debug("elicitation/complete not sent", "session", sid, "error", err)
	}
}

// signInHint says how to sign in to the servers the session's user must sign in to before
// calling them: those of hits, and those whose tools nobody has signed in to learn yet;
// "" when there are none.
func (s *Server) signInHint(ctx context.Context, sess *session, hits []finder.Hit) string {
	var hint string
	seen := map[string]bool{}
	u := sess.who()
	ask := func(server, why string) {
		if seen[server] {
			return
		}
		seen[server] = true
		if s.ups.NeedsSignIn(ctx, u, server) {
			text, _, _ := s.signInText(sess, server)
			hint += why + text + " "
		}
	}
	for _, h := range hits {
		ask(h.Tool.Server, "Before calling its tools: ")
	}
	for _, st := range visible(s.ups.Statuses(), s.ups.Catalog(), u) {
		if st.PerUser && st.Tools == 0 {
			ask(st.Name, "Its tools are known once someone signs in: ")
		}
	}
	return hint
}

// mayKnow reports whether the session's user may know of the named server: they may use it
// or one of its tools.
func (s *Server) mayKnow(sess *session, server string) bool {
	return slices.ContainsFunc(visible(s.ups.Statuses(), s.ups.Catalog(), sess.who()), func(st upstream.Status) bool { return st.Name == server })
}

// asOwner returns ctx naming the owner of the request's session as the caller: upstream, a
// request is the session owner's (a server signed in to per user gets their sign-in),
// whatever the transport kept of the HTTP request's context.
func (s *Server) asOwner(ctx context.Context) context.Context {
	return identity.NewContext(ctx, s.sessionFrom(ctx).who())
}

// learn has the tools of server, signed in to per user and with none known here, learned
// through the session's user's own sign-in (another replica may have learned them, or the
// user signed in there); it reports whether the catalog may have changed.
func (s *Server) learn(ctx context.Context, sess *session, server string) bool {
	for _, st := range s.ups.Statuses() {
		if st.Name == server && st.PerUser && st.Tools == 0 {
			if err := s.ups.Learn(s.asOwner(ctx), sess.who(), server); err != nil {
				s.log.Debug("upstream tools not learned", "upstream", server, "error", err)
				return false
			}
			return true
		}
	}
	return false
}

// learnAll learns, before a search, the tools of every server signed in to per user that
// has none known here and that the session's user has signed in to.
func (s *Server) learnAll(ctx context.Context, sess *session) {
	u := sess.who()
	if u.Kind != identity.Person {
		return
	}
	for _, st := range s.ups.Statuses() {
		if st.PerUser && st.Tools == 0 && st.Admits(u) && !s.ups.NeedsSignIn(ctx, u, st.Name) {
			s.learn(ctx, sess, st.Name)
		}
	}
}
