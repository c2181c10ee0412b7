package proxy

import (
	"context"
	"encoding/json"
	"time"

	"github.com/toolsift/toolsift/internal/identity"
)

// SessionStore keeps each session's record where every replica of a service reads it
// (state.Redis), so that any replica serves any session.
type SessionStore interface {
	Save(ctx context.Context, id string, rec []byte) error
	Load(ctx context.Context, id string) (rec []byte, ok bool, err error)
}

// record is a session as the store keeps it: what a replica that did not open it needs to
// answer as the first would.
type record struct {
	User      identity.User    `json:"user"`
	Client    string           `json:"client,omitempty"`
	Version   string           `json:"version,omitempty"` // the client's
	HabitFrom int              `json:"habitFrom,omitempty"`
	Late      bool             `json:"late,omitempty"`
	LateSince time.Time        `json:"lateSince,omitzero"`
	Protocol  string           `json:"protocol,omitempty"`
	Holds     bool             `json:"holds"`
	Settle    time.Duration    `json:"settle,omitempty"`
	Wait      time.Duration    `json:"wait,omitempty"`
	Samples   bool             `json:"samples,omitempty"`
	URLElicit bool             `json:"urlElicit,omitempty"`
	Unlocked  []string         `json:"unlocked,omitempty"`
	Used      map[string]int64 `json:"used,omitempty"`
	Tick      int64            `json:"tick,omitempty"`
}

// persist saves sess's record in the store, if there is one. A store that fails is logged;
// the session goes on from memory here.
func (s *Server) persist(ctx context.Context, sess *session) {
	if s.opts.Sessions == nil || sess.id == "" {
		return
	}
	sess.mu.Lock()
	rec := record{User: sess.user, Client: sess.client, Version: sess.clientVersion, HabitFrom: sess.habitFrom, Late: sess.late, LateSince: sess.lateSince,
		Protocol: sess.protocol, Holds: sess.holds, Settle: sess.settle,
		Wait: sess.wait, Samples: sess.samples, URLElicit: sess.urlElicit, Unlocked: sess.unlocked, Used: sess.used, Tick: sess.tick}
	data, err := json.Marshal(rec)
	sess.mu.Unlock()
	if err == nil {
		err = s.opts.Sessions.Save(context.WithoutCancel(ctx), sess.id, data)
	}
	if err != nil {
		// Once a minute at most: while the store is down, every unlocking search fails so.
		now := time.Now().UnixNano()
		if last := s.persistWarned.Load(); now-last > int64(time.Minute) && s.persistWarned.CompareAndSwap(last, now) {
			s.log.Warn("session not saved to the shared state: served from this replica's memory", "session", sess.id, "error", err)
		} else {
			s.log.Debug("session not saved to the shared state", "session", sess.id, "error", err)
		}
	}
}

// restore returns the session id as the store keeps it, or nil.
func (s *Server) restore(id string) *session {
	if s.opts.Sessions == nil || id == "" {
		return nil
	}
	data, ok, err := s.opts.Sessions.Load(context.Background(), id)
	if err != nil {
		s.log.Warn("session not read from the shared state", "session", id, "error", err)
	}
	var rec record
	if !ok || json.Unmarshal(data, &rec) != nil {
		return nil
	}
	sess := s.newSession(id, mcpConn{mcp: s.mcp, id: id, grace: s.opts.ForwardGrace})
	sess.user, sess.client, sess.protocol, sess.holds = rec.User, rec.Client, rec.Protocol, rec.Holds
	sess.clientVersion, sess.habitFrom, sess.late, sess.lateSince = rec.Version, rec.HabitFrom, rec.Late, rec.LateSince
	if _, known := habits[rec.Client]; known {
		sess.habitFrom = fromTable // a record from before habits were learned says nothing
	}
	sess.settle, sess.wait, sess.samples, sess.urlElicit = rec.Settle, rec.Wait, rec.Samples, rec.URLElicit
	sess.unlocked, sess.used, sess.tick = rec.Unlocked, rec.Used, rec.Tick
	sess.guest = true
	s.log.Info("session restored from the shared state", "session", id, "client", rec.Client, "unlocked", len(rec.Unlocked))
	return sess
}

// evictGuestsLocked forgets the sessions restored here that have been idle for the idle
// timeout: mcp-go registers none of them, so nothing else ends them here. s.sessionsMu
// must be held.
func (s *Server) evictGuestsLocked(now time.Time) {
	for id, sess := range s.sessions {
		if sess.guest && now.Sub(time.Unix(0, sess.lastUsed.Load())) > s.opts.SessionIdleTimeout {
			delete(s.sessions, id)
		}
	}
}
