package pin

import (
	"context"
	"errors"

	"fmt"
	"sync"
	"time"

	"github.com/toolsift/toolsift/poison"
)

// Store keeps the entries where every process that pins sees them. It keeps the versions'
// definitions apart (see Apart): every start reads the entries, and only a review needs the
// definitions.
type Store interface {
	// Load returns every entry, its versions without their definitions, and the store's
	// version.
	Load(ctx context.Context) (map[Key]Entry, string, error)
	// Update applies f to the stored entries while no other process may, stores what f
	// left (the definitions its versions carry apart), and returns that, without
	// definitions, and the new version.
	Update(ctx context.Context, f func(map[Key]Entry) error) (map[Key]Entry, string, error)
	// Definitions returns the definitions of the versions the entries name, by digest.
	Definitions(ctx context.Context) (map[string]Definition, error)
	// Version changes whenever the entries do; it is cheap to ask.
	Version(ctx context.Context) (string, error)
}

// Apart takes the definitions out of the entries' versions, for a store to keep apart: it
// returns those that carry one, by digest. A version's definition is whatever its digest
// names, so the same digest is the same definition wherever it comes from.
func Apart(entries map[Key]Entry) map[string]Definition {
	defs := map[string]Definition{}
	strip := func(v *Version) *Version {
		if v == nil || v.Definition.IsZero() {
			return v
		}
		defs[v.Digest] = v.Definition
		c := *v // it may be the caller's
		c.Definition = Definition{}
		return &c
	}
	for k, e := range entries {
		e.Pinned, e.Pending = strip(e.Pinned), strip(e.Pending)
		entries[k] = e
	}
	return defs
}

// Referenced reports whether some entry's version has the digest.
func Referenced(entries map[Key]Entry) func(digest string) bool {
	used := map[string]bool{}
	for _, e := range entries {
		for _, v := range []*Version{e.Pinned, e.Pending} {
			if v != nil {
				used[v.Digest] = true
			}
		}
	}
	return func(d string) bool { return used[d] }
}

// WithDefinitions gives e's versions their definitions from defs.
func (e Entry) WithDefinitions(defs map[string]Definition) Entry {
	fill := func(v *Version) *Version {
		if v == nil {
			return nil
		}
		c := *v
		c.Definition = defs[v.Digest]
		return &c
	}
	e.Pinned, e.Pending = fill(e.Pinned), fill(e.Pending)
	return e
}

// Book is a process's view of a Store: it judges each tool a server lists (Judge), writes
// what that changed (Flush), and notices what others changed (Refresh).
type Book struct {
	store Store
	now   func() time.Time

	mu      sync.Mutex // guards the fields below
	entries map[Key]Entry
	version string
	dirty   map[Key]Entry // entries Judge changed, to be written by Flush
	// stale is set when Flush found another process's decision stored over this one's.
	stale bool
}

// Open loads the store's entries. A store that cannot be read is an error: pins that were
// not read cannot protect anyone.
func Open(ctx context.Context, store Store, now func() time.Time) (*Book, error) {
	if now == nil {
		now = time.Now
	}
	entries, version, err := store.Load(ctx)
	if err != nil {
		return nil, err
	}
	return &Book{store: store, now: now, entries: entries, version: version, dirty: map[Key]Entry{}}, nil
}

// ErrUnavailable marks a Store that cannot be reached now, as opposed to one that cannot be
// read (see Unloaded).
var ErrUnavailable = errors.New("pinned tools unavailable")

// Unloaded returns a book of store that has read nothing yet, for a store that could not be
// reached (ErrUnavailable): it judges as on a first start, pinning what it sees, and loads
// the store at its first Refresh once it answers, when what others pinned first wins.
func Unloaded(store Store, now func() time.Time) *Book {
	if now == nil {
		now = time.Now
	}
	return &Book{store: store, now: now, entries: map[Key]Entry{}, version: unloaded, dirty: map[Key]Entry{}}
}

// unloaded is the version of a book that has read nothing: no store has it.
const unloaded = "\x00unloaded"

// Judge says whether the tool as seen is held, and why; nil means it may be used.
func (b *Book) Judge(s Seen) *Why {
	b.mu.Lock()
	defer b.mu.Unlock()
	next, why, changed := decide(b.entries[s.Key], s, b.now(), poison.Version)
	if changed {
		b.entries[s.Key] = next
		b.dirty[s.Key] = next
	}
	return why
}

// Entry returns what is kept of a tool.
func (b *Book) Entry(k Key) (Entry, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[k]
	return e, ok
}

// Flush writes what Judge changed since the last Flush. What it could not write is kept for
// the next.
func (b *Book) Flush(ctx context.Context) error {
	b.mu.Lock()
	dirty := b.dirty
	b.dirty = map[Key]Entry{}
	b.mu.Unlock()
	if len(dirty) == 0 {
		return nil
	}
	entries, version, err := b.store.Update(ctx, func(stored map[Key]Entry) error {
		for k, mine := range dirty {
			stored[k] = merge(stored[k], mine)
		}
		return nil
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		for k, e := range dirty {
			if _, newer := b.dirty[k]; !newer {
				b.dirty[k] = e
			}
		}
		return fmt.Errorf("recording pinned tools: %w", err)
	}
	for k, mine := range dirty {
		if !same(entries[k], mine) {
			// Another process decided otherwise first (it pinned another version, say):
			// the catalog built on this one's decision is judged again (Refresh).
			b.stale = true
		}
	}
	// What Judge decided meanwhile stays in memory until its own Flush.
	for k, e := range b.dirty {
		entries[k] = e
	}
	b.entries, b.version = entries, version
	return nil
}

// Refresh loads the entries again if another process changed them (an approval, a
// rejection, a pin), and reports whether what the book decides changed since it was last
// asked: that, or a Flush that found another process's decision first.
func (b *Book) Refresh(ctx context.Context) (bool, error) {
	v, err := b.store.Version(ctx)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	current, stale := v == b.version, b.stale
	b.stale = false
	b.mu.Unlock()
	if current {
		return stale, nil
	}
	entries, version, err := b.store.Load(ctx)
	if err != nil {
		return false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, e := range b.dirty {
		entries[k] = merge(entries[k], e)
	}
	b.entries, b.version = entries, version
	return true, nil
}
