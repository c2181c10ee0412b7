package proxy

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolsift/toolsift/habit"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/upstream"
)

// session is one client session's view of the tools: the tools it unlocked, and its side of
// the re-list handshake.
//
// # Why a handshake
//
// A client adds tools it re-listed after notifications/tools/list_changed to the next model
// request only if that re-list finished before the result of the tool call that unlocked them
// arrived: sent back to back, the new tool mostly missed the next model request in Claude
// Code and opencode, and holding the result until the re-list was answered put it there
// every time, at the cost of one round trip (docs/clients.md). So a tool_search that unlocks
// tools holds its result until the session has re-listed them.
//
// # The protocol
//
//  1. Unlock (Server.unlock): tool_search, or call_tool on a hidden tool, appends the names to
//     unlocked and increments version. New tools go at the end, so that the start of
//     tools/list, and the client's prompt cache with it, stays stable; past MaxUnlocked the
//     least recently used fall out, since every tool listed is resent with every model
//     request.
//  2. Announce (Server.announce): send notifications/tools/list_changed through the
//     session's Conn, in the calling request's context: over streamable HTTP a client that
//     holds no GET stream has only the POST stream of its current request.
//  3. Hold (tool_search only): wait for listed to close, capped by Options.ListWait. Halfway
//     through, send list_changed a second time in case the first was lost. call_tool does not
//     hold: the model already has the tool it called.
//  4. Re-list (Server.afterListTools): tools/list is built from unlocked, and the session's
//     Conn is told (Conn.Listed); it counts the list at the version it was built at once
//     the answer is on its way: over stdio once written, since the answer and the
//     tool_search result are written by different goroutines and the client must read them
//     in that order; over mcp-go's transports at once, as mcp-go writes it.
//  5. markListed: if the list has every unlock so far (its version is the latest), close
//     listed and replace it with a fresh channel. That releases the held tool_search.
//
// Clients differ (docs/clients.md), and the hold adapts to each session:
//
//   - Gemini CLI re-lists at once but applies the new list in a background refresh that may
//     still be running when it builds the next model request: its hold lasts settle longer.
//   - Codex never re-lists by default, and with mcp_tool_list_changed on only once the result
//     has arrived: a hold only delays it, so its sessions never hold.
//   - opencode can go seconds without reading early in a session: its hold lasts longer.
//   - Any other client that lets a hold run out without re-listing has shown that it does not
//     re-list before reading the result; its later searches do not hold either.
//
// Under protocol 2026-07-28 and later (stable) nothing is unlocked, so nothing is announced.
//
// # Locks
//
// Lock order: Server.sessionsMu before session.mu (Server.ResourceUpdated and SessionBusy
// hold both). Every other mutex of the package is a leaf: no other lock of the package is
// taken while it is held. No lock is held while waiting for a client; only Server.registerMu is held across
// calls into mcp-go (see syncPromptsAndResources).
type session struct {
	// Fixed at creation.
	id   string // "" for a request without a session
	conn Conn

	mu sync.Mutex // guards the fields below
	// unlocked holds exposed names in unlock order; used maps the same names to the tick
	// of their last use (unlocked, matched again, or called), for choosing which fall out
	// past Options.MaxUnlocked.
	unlocked []string
	used     map[string]int64
	tick     int64
	// listed is closed, and replaced, whenever the session has listed tools that include
	// every unlock so far (step 5).
	listed chan struct{}
	// version counts the session's unlocks; a list built before the latest does not count
	// as the re-list a waiting tool_search wants.
	version int
	// client is the name the client gave in initialize ("" until then), and protocol the
	// protocol revision it asked for.
	client, protocol string
	// user is who opened the session (over HTTP, as the gate found); set as it opens.
	user identity.User
	// holds is false for a session whose client does not re-list before reading a result:
	// known so by its name, learned so by an earlier session, or shown when a hold ran out
	// (see announce).
	holds bool
	// clientVersion is the version the client gave in initialize; habitFrom where holds
	// came from (fromTable, fromLearned, fromDefault).
	clientVersion string
	habitFrom     int
	// late: the client re-lists, but only once it has read the result (learned): its
	// re-lists while toolsift does not hold say nothing of its habit.
	late bool
	// timedOut: a hold of this session ran out; a re-list after it shows the client re-lists
	// late. notified is when a search last announced unlocked tools without holding: a
	// re-list soon after it, from a client not known to re-list late, may mean the client
	// now re-lists first (an update), and probe makes the next such search hold to learn it.
	timedOut, probe bool
	notified        time.Time
	// lateSince is when the client was learned to re-list late: it is probed again on
	// another day, in case that was a slow moment of a client that re-lists first.
	lateSince time.Time
	// settle is how much longer a hold lasts once the re-list is written, for a client that
	// applies the new list asynchronously.
	settle time.Duration
	// wait, if not zero, caps the hold instead of Options.ListWait.
	wait time.Duration
	// samples is set when the client declared the sampling capability, urlElicit when it
	// declared URL-mode elicitation.
	samples, urlElicit bool
	// subs holds the resource URIs the session subscribed to. It and used are made on first
	// use: most sessions subscribe to nothing, and many never unlock anything.
	subs map[string]bool
	// calls counts the session's tool calls in flight upstream (Options.MaxCalls).
	calls int

	// forwarded counts the notifications forwarded to the session for its calls (progress,
	// upstream log messages): a call that forwarded one flushes before its result.
	forwarded atomic.Uint64
	// guest marks a session another replica opened, restored here from the shared state
	// (Options.Sessions); lastUsed is when it was last used here, in Unix nanoseconds.
	guest    bool
	lastUsed atomic.Int64
}

// relists reports whether the session's client is expected to re-list after list_changed
// before it reads the result at hand: whether its tool list shows unlocked tools at once.
func (sess *session) relists() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.holds
}

// SessionBusy reports whether the session with the given id has its MaxCalls of calls in
// flight. It takes sessionsMu, then the session's mu.
func (s *Server) SessionBusy(id string) bool {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return false
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.calls >= s.opts.MaxCalls
}

// enterCall counts a call in, unless the session already has max in flight.
func (sess *session) enterCall(max int) bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.calls >= max {
		return false
	}
	sess.calls++
	return true
}

// leaveCall counts a call out.
func (sess *session) leaveCall() {
	sess.mu.Lock()
	sess.calls--
	sess.mu.Unlock()
}

// session returns the state of the session with the given id, creating it on first use as
// a session of a transport mcp-go serves.
func (s *Server) session(id string) *session {
	s.sessionsMu.Lock()
	sess, ok := s.sessions[id]
	s.sessionsMu.Unlock()
	if ok {
		sess.lastUsed.Store(time.Now().UnixNano())
		return sess
	}
	// Another replica may have opened it (Options.Sessions); read outside the lock.
	restored := s.restore(id)
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	if sess, ok := s.sessions[id]; ok {
		return sess
	}
	if restored != nil {
		s.evictGuestsLocked(time.Now())
		sess = restored
	} else {
		sess = s.newSession(id, mcpConn{mcp: s.mcp, id: id, grace: s.opts.ForwardGrace})
	}
	sess.lastUsed.Store(time.Now().UnixNano())
	s.sessions[id] = sess
	return sess
}

// openSession starts the state of a session served over conn.
func (s *Server) openSession(id string, conn Conn) *session {
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	sess := s.newSession(id, conn)
	s.sessions[id] = sess
	return sess
}

func (s *Server) newSession(id string, conn Conn) *session {
	return &session{id: id, conn: conn, listed: make(chan struct{}), holds: true}
}

// endSession forgets a session's state: mcp-go unregisters a session when its client sends
// DELETE, when it idles past the timeout, or when stdio ends.
func (s *Server) endSession(id string) {
	s.watchers.tell(context.Background(), ended, id)
	s.opts.Stats.Ended(id)
	s.sessionsMu.Lock()
	sess := s.sessions[id]
	delete(s.sessions, id)
	s.sessionsMu.Unlock()
	if sess == nil {
		return
	}
	s.elicitedMu.Lock()
	for link, sid := range s.elicited {
		if sid == id {
			delete(s.elicited, link)
		}
	}
	s.elicitedMu.Unlock()
	sess.mu.Lock()
	uris := make([]string, 0, len(sess.subs))
	for uri := range sess.subs {
		uris = append(uris, uri)
	}
	sess.mu.Unlock()
	for _, uri := range uris {
		s.unsubscribe(context.Background(), sess, uri)
	}
}

// sessionFrom returns the state of the request's session, or a throwaway one for a request
// made outside any session.
func (s *Server) sessionFrom(ctx context.Context) *session {
	if stable(ctx) {
		// A 2026-07-28 request is a session of its own: mcp-go serves each on an ephemeral
		// session with no ID, which must never be the one shared record of all of them.
		// The caller is who this request shows it is.
		sess := s.newSession("", mcpConn{mcp: s.mcp, grace: s.opts.ForwardGrace})
		sess.user = identity.FromContext(ctx)
		if info := server.RequestProtocolInfoFromContext(ctx); info.ClientInfo != nil {
			sess.client = info.ClientInfo.Name
		}
		sess.holds = false
		return sess
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return s.session(cs.SessionID())
	}
	return s.newSession("", mcpConn{mcp: s.mcp, grace: s.opts.ForwardGrace})
}

// unlock makes names, best first, visible to sess (step 1), and counts them used. It
// reports those that were not visible before, and those that fell out, least recently used
// first, to keep the session within max.
func (s *Server) unlock(sess *session, cat *upstream.Catalog, tools []upstream.Tool, max int) (added, dropped []string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var open []string
	for _, t := range tools {
		if !t.AlwaysLoad {
			open = append(open, t.Exposed)
		}
	}
	if sess.used == nil && len(open) > 0 {
		sess.used = map[string]int64{}
	}
	for _, n := range open {
		if _, ok := sess.used[n]; !ok {
			sess.used[n] = 0
			sess.unlocked = append(sess.unlocked, n)
			added = append(added, n)
		}
	}
	// The best is used last, so that it is the last of them to fall out.
	for _, n := range slices.Backward(open) {
		sess.tick++
		sess.used[n] = sess.tick
	}
	for len(sess.unlocked) > max {
		oldest := 0
		for i, n := range sess.unlocked {
			if sess.used[n] < sess.used[sess.unlocked[oldest]] {
				oldest = i
			}
		}
		n := sess.unlocked[oldest]
		sess.unlocked = slices.Delete(sess.unlocked, oldest, oldest+1)
		delete(sess.used, n)
		if i := slices.Index(added, n); i >= 0 {
			added = slices.Delete(added, i, i+1)
		} else if _, ok := cat.Lookup(n); ok {
			// A tool its server no longer offers falls out unannounced: call_tool cannot
			// reach it, as the result says of what is dropped.
			dropped = append(dropped, n)
		}
	}
	if len(added) > 0 || len(dropped) > 0 {
		sess.version++
	}
	return added, dropped
}

// Hold outcomes, as the tool search log reports them.
const (
	holdNone     = "none"     // nothing was unlocked
	holdSkipped  = "skipped"  // the session's client does not re-list before reading a result
	holdRelisted = "relisted" // the session re-listed (and its client had settle to apply it)
	holdTimeout  = "timeout"  // ListWait passed first; the session holds no more
	holdCanceled = "canceled" // the request was canceled
)

// announce tells the session its tool list changed (step 2). With wait, it then holds until
// the session re-lists, up to ListWait, sending the notification a second time halfway in
// case the first was lost (step 3), and reports how the hold ended.
func (s *Server) announce(ctx context.Context, sess *session, wait bool, reason string) string {
	sess.mu.Lock()
	listed, holds, settle := sess.listed, sess.holds, sess.settle
	limit := cmp.Or(sess.wait, s.opts.ListWait)
	sess.mu.Unlock()
	s.notifyListChanged(ctx, sess, reason)
	if !wait {
		return holdNone
	}
	sess.mu.Lock()
	probing := !holds && sess.probe
	if !holds && !probing {
		sess.notified = time.Now()
	}
	sess.mu.Unlock()
	if !holds && !probing {
		return holdSkipped
	}
	outcome := holdTimeout
	half := time.NewTimer(limit / 2)
	defer half.Stop()
	rest := time.NewTimer(limit)
	defer rest.Stop()
wait:
	for {
		select {
		case <-listed:
			outcome = holdRelisted
			break wait
		case <-ctx.Done():
			return holdCanceled
		case <-half.C:
			s.notifyListChanged(ctx, sess, reason+" (again)")
		case <-rest.C:
			break wait
		}
	}
	s.learnFromHold(sess, outcome, probing)
	if outcome == holdTimeout {
		return outcome
	}
	if settle > 0 {
		t := time.NewTimer(settle)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return holdCanceled
		}
	}
	return outcome
}

// notifyListChanged sends list_changed through the session's Conn, before the reply of the
// request at hand.
func (s *Server) notifyListChanged(ctx context.Context, sess *session, reason string) {
	if err := sess.conn.Notify(ctx, string(mcp.MethodNotificationToolsListChanged), nil); err != nil {
		s.log.Warn("list_changed not sent", "session", sess.id, "reason", reason, "error", err)
		return
	}
	s.log.Debug("list_changed sent", "session", sess.id, "reason", reason)
}

// afterListTools replaces mcp-go's list with the session's own (see toolsFor), and has it
// count as the session's re-list once written (step 4).
func (s *Server) afterListTools(ctx context.Context, id any, _ *mcp.ListToolsRequest, result *mcp.ListToolsResult) {
	sess := s.sessionFrom(ctx)
	forms, version := s.toolsFor(sess, stable(ctx))
	s.log.Debug("tools listed", "session", sess.id, "tools", len(forms), "version", version)
	result.Tools = make([]mcp.Tool, 0, len(forms))
	for _, f := range forms {
		result.Tools = append(result.Tools, f.tool)
	}
	sess.conn.Listed(ctx, id, forms, func() {
		if sess.markListed(version) {
			s.learnFromRelist(sess)
		}
	})
}

// toolsFor returns the session's tools/list (step 4): always-load tools, tool_search,
// call_tool, then unlocked tools in unlock order; or every tool, while they all fit
// (fitsAll); under a stable protocol revision, no unlocked tools. Each tool's form comes
// from the catalog's view, made once however many sessions list it. It returns the
// session's version the list was built at.
func (s *Server) toolsFor(sess *session, stable bool) ([]*form, int) {
	v := s.view()
	var forms []*form
	all := s.fitsAll(v)
	if all {
		forms = make([]*form, 0, len(v.cat.Tools))
		for _, t := range v.cat.Tools {
			f, _ := v.form(t.Exposed)
			forms = append(forms, f)
		}
	} else {
		forms = v.alwaysForms()
		search, call := s.meta.forms(visible(s.ups.Statuses(), v.cat, sess.who()))
		forms = append(forms, search, call)
	}
	sess.mu.Lock()
	var unlocked []string
	if !all && !stable {
		unlocked = slices.Clone(sess.unlocked)
	}
	version := sess.version
	sess.mu.Unlock()
	for _, name := range unlocked {
		if f, ok := v.form(name); ok && !f.always {
			forms = append(forms, f)
		}
	}
	return admitted(sess.who(), forms), version
}

// who returns the session's user.
func (sess *session) who() identity.User {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.user
}

// admits returns what decides whether the session's user may use a tool; nil for the
// Local user, who may use every tool.
func (sess *session) admits() func(*upstream.Tool) bool {
	u := sess.who()
	if u.Kind == identity.Local {
		return nil
	}
	return func(t *upstream.Tool) bool { return t.Admits(u) }
}

// visible returns the statuses of the servers u may know of: those u may use, or one of
// whose tools u may use. A server u may not use does not exist for them.
func visible(statuses []upstream.Status, cat *upstream.Catalog, u identity.User) []upstream.Status {
	if u.Kind == identity.Local {
		return statuses
	}
	seen := map[string]bool{}
	for i := range cat.Tools {
		if t := &cat.Tools[i]; !seen[t.Server] && t.Admits(u) {
			seen[t.Server] = true
		}
	}
	return slices.DeleteFunc(statuses, func(st upstream.Status) bool { return !seen[st.Name] && !st.Admits(u) })
}

// admitted returns the subset of forms the session's user may use, in order: what a user
// may not use does not exist for them. forms is returned as is for the Local user.
func admitted(u identity.User, forms []*form) []*form {
	if u.Kind == identity.Local {
		return forms
	}
	return slices.DeleteFunc(forms, func(f *form) bool { return !f.src.Admits(u) })
}

// markListed wakes whoever waits for the session to re-list, if the list, built at version,
// has every unlock so far (step 5).
func (sess *session) markListed(version int) (relistedUnheld bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if version < sess.version {
		return false
	}
	close(sess.listed)
	sess.listed = make(chan struct{})
	return !sess.holds
}

// learnFromHold takes in what a hold showed of a client not in the table: a re-list within
// it, that the client re-lists first; a hold that ran out, that it does not (and, if it was
// probing, that it re-lists late). The session follows at once; the next session of the
// client starts with it (Options.Habits).
func (s *Server) learnFromHold(sess *session, outcome string, probing bool) {
	sess.mu.Lock()
	if sess.habitFrom == fromTable || outcome != holdRelisted && outcome != holdTimeout {
		// A known client's habit stands: a client that re-lists was only slow this time.
		sess.mu.Unlock()
		return
	}
	relists := outcome == holdRelisted
	changed := sess.habitFrom != fromLearned || sess.holds != relists || probing
	sess.holds, sess.probe = relists, false
	if relists {
		sess.late = false
	} else {
		sess.timedOut = true
		if probing {
			sess.late, sess.lateSince = true, time.Now()
		}
	}
	sess.habitFrom = fromLearned
	key, late := habitKey0(sess), sess.late
	sess.mu.Unlock()
	if changed {
		s.recordHabit(sess, habitText(relists, late), func(ctx context.Context, hs Habits) error { return hs.Learn(ctx, key, relists, late) })
	}
}

// habitKey0 is habitKey for a session whose mu is held.
func habitKey0(sess *session) habit.Key {
	k := habit.Key{Name: sess.client, Version: sess.clientVersion}
	if sess.user.Kind != identity.Local {
		k.User = sess.user.Key
	}
	return k
}

// habitText says a habit, for the log.
func habitText(relists, late bool) string {
	switch {
	case relists:
		return "re-lists before reading a result"
	case late:
		return "re-lists after reading a result"
	}
	return "does not re-list mid-turn"
}

// learnFromRelist takes in a re-list while the session does not hold: after a hold ran
// out, the client re-lists late; soon after a search announced tools, from a client not
// known to re-list late, the next such search holds to learn whether it now re-lists
// first.
func (s *Server) learnFromRelist(sess *session) {
	sess.mu.Lock()
	if sess.habitFrom == fromTable || sess.holds {
		sess.mu.Unlock()
		return
	}
	switch {
	case sess.timedOut && !sess.late:
		sess.late, sess.lateSince = true, time.Now()
		key := habitKey0(sess)
		sess.mu.Unlock()
		s.recordHabit(sess, habitText(false, true), func(ctx context.Context, hs Habits) error { return hs.Learn(ctx, key, false, true) })
		return
	case !sess.notified.IsZero() && time.Since(sess.notified) < cmp.Or(sess.wait, s.opts.ListWait) &&
		(!sess.late || time.Since(sess.lateSince) > 24*time.Hour):
		// Probed once a day for a late client: one slow moment must not leave a client that
		// re-lists first unheld for good.
		sess.probe = true
	}
	sess.mu.Unlock()
}
