package clients

import (
	"fmt"
	"slices"
	"strings"
)

// entryStatus says what import did with one entry of a client file, which is also what
// setup does with it: imported entries move to toolsift, others stay in the client.
type entryStatus int

const (
	imported entryStatus = iota
	// self is toolsift's own entry: left out of the import, replaced by setup.
	self
	// skipped entries could not be translated; they stay in the client.
	skipped
	// shadowed entries are overridden by a later entry of the same name: the client itself
	// ignores them, and setup drops them.
	shadowed
)

// entryRef is one entry of a servers block.
type entryRef struct {
	key    string
	status entryStatus
	// server is the imported server, named as in toolsift's configuration.
	server Server
	// raw is the entry's text, key included, for writing it back unchanged; span is where
	// it is in a JSON file.
	raw  string
	span [2]int
	// self is the command of toolsift's own entry.
	self Entry
}

// block is one table of servers in a client file, such as mcpServers.
type block struct {
	// path are the keys leading to it from the file's root.
	path []string
	// scope is Server.Scope for its servers.
	scope string
	// primary is the block setup puts toolsift's entry in.
	primary bool
	node    *jnode // JSON files; nil if the file does not have it
	entries []entryRef
}

// file is a parsed client file.
type file struct {
	src    Source
	data   []byte
	json   *jdoc    // JSON files
	toml   *tomlDoc // Codex
	blocks []*block
	imp    Import
	// inputs are VS Code's prompt definitions by id, for messages.
	inputs map[string]string
	// consent is the client's record of the project's approval; nil for a user's file.
	consent *consent
	named   bool
}

// parseFile reads a client file.
func parseFile(path string, data []byte, kind Kind, opts Options) (*file, error) {
	guessed := false
	if kind == "" {
		var err error
		if kind, guessed, err = detect(path, data); err != nil {
			return nil, err
		}
	}
	f := &file{src: Source{Path: path, Kind: kind}, data: data}
	f.src.Project = projectOf(path, kind, opts.Home)
	f.consent, f.named = readConsent(f.src, opts), opts.Named
	f.imp.Sources = []Source{f.src}
	if guessed {
		f.warnFile("read as Claude Code's .mcp.json format (its mcpServers could belong to several clients); name the client if it is another one's")
	}
	var err error
	if kind == Codex {
		err = f.readTOML(opts)
	} else {
		err = f.readJSON(opts)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// finish names an imported server, records the notes on s as warnings, and adds it.
func (f *file) finish(s *Server, st entryStatus, ref *entryRef) {
	if st == imported {
		// Every client's project server passes the one consent rule here.
		f.consent.apply(s, f.named)
		s.Name = sanitize(s.Key)
		if s.Name != s.Key {
			s.Notes = append(s.Notes, fmt.Sprintf("renamed to %q: toolsift server names use letters, digits, _ and -, at most %d", s.Name, maxName))
		}
		if (s.Type == "http" || s.Type == "sse") && !hasAuthorization(s.Headers) {
			// The client signed in to it itself: toolsift needs its own sign-in.
			s.Notes = append(s.Notes, fmt.Sprintf("a remote server without an Authorization header usually signs in with OAuth: if toolsift status says it needs a login, run: toolsift auth login %s", s.Name))
		}
	}
	for _, n := range s.Notes {
		f.warn(s.Key, s.Scope, n)
	}
	switch st {
	case imported:
		ref.server = *s
		ref.server.Name = f.imp.add(*s)
	case self:
		ref.self = Entry{Command: s.Command, Args: s.Args}
	}
}

// warn records a warning about the server key.
func (f *file) warn(key, scope, msg string) {
	f.imp.Warnings = append(f.imp.Warnings, newWarning(f.src.Path, key, scope, msg))
}

// warnFile records a warning about the whole file.
func (f *file) warnFile(msg string) {
	f.imp.Warnings = append(f.imp.Warnings, Warning{File: f.src.Path, Msg: msg})
}

// newWarning makes a warning about the server key, in scope if the file has several.
func newWarning(file, key, scope, msg string) Warning {
	if key == "" {
		key = "(no name)"
	}
	w := Warning{File: file, Server: key, Msg: msg}
	if scope != "" {
		w.Server = key + " (" + scope + ")"
	}
	return w
}

// has reports whether any entry of f has the status st.
func (f *file) has(st entryStatus) bool {
	for _, b := range f.blocks {
		for _, e := range b.entries {
			if e.status == st {
				return true
			}
		}
	}
	return false
}

// selfEntry returns the command toolsift's entry runs.
func (f *file) selfEntry() (Entry, bool) {
	for _, b := range f.blocks {
		for _, e := range b.entries {
			if e.status == self {
				return e.self, true
			}
		}
	}
	return Entry{}, false
}

// block returns the servers block at path, or nil.
func (f *file) block(path []string) *block {
	for _, b := range f.blocks {
		if slices.Equal(b.path, path) {
			return b
		}
	}
	return nil
}

// hasAuthorization reports whether headers carry credentials of the user's own.
func hasAuthorization(headers map[string]string) bool {
	for k := range headers {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}
