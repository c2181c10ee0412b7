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
	// User is the person of a shared service whose sessions taught it, if any: one person's
	// client cannot teach another's (see Key).
	User string `json:"user,omitempty"`
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

// MaxClients bounds the file, and MaxPerUser the clients of one person of a shared
// service: the clients seen least recently go first.
const (
	MaxClients = 200
	MaxPerUser = 20
)

// Key names a client: its name and version as it gives them in initialize, and the person
// whose session it is on a shared service ("" for the local user).
type Key struct{ Name, Version, User string }

func (k Key) matches(c Client) bool {
	return c.Name == clean(k.Name) && c.Major == Major(k.Version) && c.User == clean(k.User)
}

// clean is s as JSON keeps it: invalid UTF-8 would come back as U+FFFD, and never match.
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

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

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Major is the major part of a version string: up to its first dot, at most 20 characters.
func Major(version string) string {
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(clean(version)), "v"), ".")
	if r := []rune(major); len(r) > 20 {
		major = string(r[:20])
	}
	return major
}

// Lookup returns what was learned of the client, if anything.
func (f *File) Lookup(k Key) (Client, bool) {
	all, _ := f.read()
	for _, c := range all {
		if k.matches(c) {
			return c, !c.Known
		}
	}
	return Client{}, false
}

// All returns every client kept, the most recently seen first.
func (f *File) All() []Client {
	all, _ := f.read()
	slices.SortStableFunc(all, func(a, b Client) int { return b.Seen.Compare(a.Seen) })
	return all
}

// Learn records what a session showed of the client: whether it re-lists before reading a
// result (relists), or only after (late).
func (f *File) Learn(ctx context.Context, k Key, relists, late bool) error {
	now := f.now().UTC()
	return f.change(ctx, k, func(c *Client) {
		c.Relists, c.Late, c.Known, c.Learned = relists, late, false, now
	})
}

// Know records a client of toolsift's own table, with its habit, so that status shows it.
func (f *File) Know(ctx context.Context, k Key, relists bool) error {
	return f.change(ctx, k, func(c *Client) {
		c.Relists, c.Late, c.Known, c.Learned = relists, false, true, time.Time{}
	})
}

// Saw records that the client was seen today: the clients seen least recently go first.
func (f *File) Saw(ctx context.Context, k Key) error {
	return f.change(ctx, k, func(*Client) {})
}

// change applies set to the client's record (made if need be), notes it was seen today, and
// writes the file if that changed anything.
func (f *File) change(ctx context.Context, k Key, set func(*Client)) error {
	if k.Name == "" || len(k.Name) > 200 || len(k.User) > 200 {
		return nil
	}
	day := f.now().UTC().Truncate(24 * time.Hour)
	return f.update(ctx, func(all []Client) ([]Client, bool) {
		i := slices.IndexFunc(all, k.matches)
		if i < 0 {
			all = append(all, Client{Name: clean(k.Name), Major: Major(k.Version), User: clean(k.User)})
			i = len(all) - 1
		}
		next := all[i]
		set(&next)
		next.Seen = day
		if next == all[i] {
			return all, false
		}
		all[i] = next
		return bound(all, next.User), true
	})
}

// bound keeps the MaxPerUser clients of user seen last, and the MaxClients of all.
func bound(all []Client, user string) []Client {
	slices.SortStableFunc(all, func(a, b Client) int { return b.Seen.Compare(a.Seen) })
	if user != "" {
		n := 0
		all = slices.DeleteFunc(all, func(c Client) bool {
			if c.User != user {
				return false
			}
			n++
			return n > MaxPerUser
		})
	}
	return all[:min(len(all), MaxClients)]
}

// read returns the clients kept. A file that is not valid is as if empty, said once, and
// rewritten by the next change; one that cannot be read is an error, and left alone.
func (f *File) read() ([]Client, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading clients' habits: %w", err)
	}
	var all []Client
	if err := json.Unmarshal(data, &all); err != nil {
		f.mu.Lock()
		warned := f.warned
		f.warned = true
		f.mu.Unlock()
		if !warned {
			f.log.Warn("clients' habits not valid; learning them anew", "file", f.path, "error", err)
		}
		return nil, nil
	}
	return all, nil
}

// update changes the clients under the file lock every toolsift process takes.
func (f *File) update(ctx context.Context, change func([]Client) ([]Client, bool)) error {
	release, err := filelock.Acquire(ctx, f.path+".lock")
	if err != nil {
		return err
	}
	defer release()
	all, err := f.read()
	if err != nil {
		return err
	}
	all, changed := change(all)
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
