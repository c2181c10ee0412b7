// Package audit writes the audit log: one JSON line per tool call, saying who called what,
// through which client and session, how long it took and how it ended. Argument values are
// left out unless asked for, and then masked like every log.
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Outcomes of a call.
const (
	OK        = "ok"         // the server answered
	ToolError = "tool_error" // the server answered with isError
	Failed    = "failed"     // no answer: the server was down, hung or timed out
	Refused   = "refused"    // toolsift refused it (the session's maxCalls)
	Unknown   = "unknown"    // no such tool, or none the caller may use
	Canceled  = "canceled"   // the client cancelled it
	SignIn    = "sign_in"    // the caller must sign in to the server first
	Input     = "input"      // the server asked the caller for input (2026-07-28: input_required)
)

// Record is one call.
type Record struct {
	Time time.Time `json:"time"`
	// User names the caller (the identity provider's user claim, or a named token's name);
	// Auth says how they proved it: person, token, config (a token of auth.tokens) or local.
	User string `json:"user,omitempty"`
	Auth string `json:"auth"`
	// Client is the name the client gave at initialize.
	Client  string `json:"client,omitempty"`
	Session string `json:"session,omitempty"`
	// Server and Tool are the upstream server and the tool's name as exposed.
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool"`
	// DurationMS is how long the call took, upstream included.
	DurationMS    float64 `json:"duration_ms"`
	Outcome       string  `json:"outcome"`
	ArgumentBytes int     `json:"argument_bytes"`
	// Arguments are the call's arguments, masked; only with audit.arguments.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Trace is the call's trace ID, when it is traced.
	Trace string `json:"trace_id,omitempty"`
}

// Log is an audit log. Its methods may be called concurrently; each record is one write.
type Log struct {
	// Arguments says whether records keep the arguments.
	Arguments bool

	mu     sync.Mutex // guards w and closer
	w      io.Writer
	closer io.Closer // nil for stdout
}

// Open opens the audit log at path, appending, or stdout for "-".
func Open(path string, arguments bool) (*Log, error) {
	if path == "-" {
		return &Log{Arguments: arguments, w: os.Stdout}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return &Log{Arguments: arguments, w: f, closer: f}, nil
}

// New returns an audit log writing to w.
func New(w io.Writer, arguments bool) *Log { return &Log{Arguments: arguments, w: w} }

// Write appends r as a line.
func (l *Log) Write(r Record) error {
	if !l.Arguments {
		r.Arguments = nil
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return os.ErrClosed
	}
	_, err = l.w.Write(line)
	return err
}

// Close closes the log's file; writes after it fail. It may be called more than once.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = nil
	if c := l.closer; c != nil {
		l.closer = nil
		return c.Close()
	}
	return nil
}
