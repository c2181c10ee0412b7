// Package habit remembers, by client and major version, whether an MCP client re-lists its
// tools when told they changed (notifications/tools/list_changed) before it reads the result
// at hand. toolsift holds a tool_search result for a client that does, so that the tools it
// unlocked reach the next model request; for one that does not, the hold is only a delay.
// What one session learned is kept in the state folder (habits.json), shared by every
// toolsift process of the user, and used by the next session from its first search.
package habit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/atomicfile"
	"github.com/toolsift/toolsift/internal/filelock"
)

// Client is what is kept of one client.
type Client struct {
	Name string `json:"name"`
	// Major is the major part of the version it gives ("2" of "2.4.1"); a new major version
	// is a new client, whose habit is learned anew.
	Major string `json:"major"`
	// Relists says it re-lists before reading the result at hand; Late that it re-lists,
	// but only once it has read it (a hold only delays such a client).
	Relists bool `json:"relists"`
	Late    bool `json:"late,omitempty"`
	// Known says the habit comes from toolsift's own table, not from a session.
	Known bool `json:"known,omitempty"`
	// Learned is when a session showed the habit (zero for a known one); Seen when the
	// client was last seen, by day.
	Learned time.Time `json:"learned,omitzero"`
	Seen    time.Time `json:"seen"`
}

// MaxClients bounds the file: the clients seen least recently go first.
const MaxClients = 200

// File keeps the clients in a file of the state folder.
type File struct {
	path string
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex // guards warned
	warned bool       // a corrupt file is said once
}

// Open returns the store at path; log may be nil, now nil for time.Now.
func Open(path string, log *slog.Logger, now func() time.Time) *File {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &File{path: path, log: log, now: now}
}

// Major is the major part of a version string: up to its first dot.
func Major(version string) string {
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(version), "v"), ".")
	if len(major) > 20 {
		major = major[:20]
	}
	return major
}

// Lookup returns what was learned of the client, if anything.
func (f *File) Lookup(name, version string) (Client, bool) {
	for _, c := range f.read() {
		if c.Name == name && c.Major == Major(version) {
			return c, !c.Known
		}
	}
	return Client{}, false
}

// All returns every client kept, the most recently seen first.
func (f *File) All() []Client {
	all := f.read()
	slices.SortStableFunc(all, func(a, b Client) int { return b.Seen.Compare(a.Seen) })
	return all
}

// Learn records whether the client re-lists before reading a result (relists), or only
// after (late); known marks a habit from toolsift's own table, recorded so that status can
// show the client. It writes only what changes: a habit, or the day the client was seen.
func (f *File) Learn(ctx context.Context, name, version string, relists, late, known bool) error {
	if name == "" || len(name) > 200 {
		return nil
	}
	now := f.now().UTC()
	day := now.Truncate(24 * time.Hour)
	major := Major(version)
	return f.update(ctx, func(all []Client) ([]Client, bool) {
		i := slices.IndexFunc(all, func(c Client) bool { return c.Name == name && c.Major == major })
		if i < 0 {
			all = append(all, Client{Name: name, Major: major})
			i = len(all) - 1
		}
		c := all[i]
		next := c
		next.Seen = day
		next.Known = known
		if next.Relists != relists || next.Late != late || c.Known != known || c.Learned.IsZero() && !known {
			next.Relists, next.Late = relists, late
			next.Learned = now
			if known {
				next.Learned = time.Time{}
			}
		}
		if next == c {
			return all, false
		}
		all[i] = next
		if len(all) > MaxClients {
			slices.SortStableFunc(all, func(a, b Client) int { return b.Seen.Compare(a.Seen) })
			all = all[:MaxClients]
		}
		return all, true
	})
}

// read returns the clients kept; a file that cannot be read is as if empty, said once.
func (f *File) read() []Client {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var all []Client
	if err == nil {
		err = json.Unmarshal(data, &all)
	}
	if err != nil {
		f.mu.Lock()
		warned := f.warned
		f.warned = true
		f.mu.Unlock()
		if !warned {
			f.log.Warn("clients' habits not read; learning them anew", "file", f.path, "error", err)
		}
		return nil
	}
	return all
}

// update changes the clients under the file lock every toolsift process takes.
func (f *File) update(ctx context.Context, change func([]Client) ([]Client, bool)) error {
	release, err := filelock.Acquire(ctx, f.path+".lock")
	if err != nil {
		return err
	}
	defer release()
	all, changed := change(f.read())
	if !changed {
		return nil
	}
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return fmt.Errorf("recording a client's habit: %w", err)
	}
	return atomicfile.Write(f.path, append(data, '\n'), 0o600)
}
