package clients

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"reflect"
	"slices"
)

// EntryName is the name of toolsift's entry in a client's configuration.
const EntryName = "toolsift"

// Entry is how a client starts toolsift.
type Entry struct {
	Command string
	Args    []string
}

var (
	// ErrStaleBackup means a backup from an earlier setup is still there although the file
	// no longer has toolsift's entry: overwriting it could lose the original.
	ErrStaleBackup = errors.New("a backup from an earlier setup is still there")
	// ErrNothingToUndo means the file has neither a backup nor toolsift's entry.
	ErrNothingToUndo = errors.New("nothing to undo")
	// ErrChanged means the file changed between reading and writing it.
	ErrChanged = errors.New("changed while toolsift was writing it")
)

// Change is a rewrite of one client file by setup or by its undo, worked out before
// anything is written; Apply writes it.
type Change struct {
	File string
	Kind Kind
	// Backup is where the backup of the file is kept (see BackupPath), or would be.
	Backup string
	// Undo is set for a change that restores the file and forgets the backup.
	Undo bool
	// Old is the file as read, nil if it does not exist; New is what Apply writes.
	Old, New []byte
	// Moved are the servers taken out of the client because toolsift serves them now
	// (setup), or the names of those put back (undo: only Name and Key are set).
	Moved []Server
	// Kept are the entries left in the client because toolsift could not import them.
	Kept []string
	// Warnings are what reading the file reported, which says why entries were kept.
	Warnings []Warning
	// Snippet is the new block of servers (setup) or a summary (undo), for showing.
	Snippet string
	// Notes are for the user: comments lost, an entry replaced, a backup ignored.
	Notes []string

	// existed says whether the file was there when read; mode is its permissions, kept when
	// it is rewritten.
	existed bool
	mode    fs.FileMode
	// state is what the state folder held for the file; record, if not nil, is what Apply
	// writes there (setup), and backup the content to back up first, if any.
	state  *setupState
	record *record
	backup []byte
}

// Changed reports whether Apply would write anything.
func (c *Change) Changed() bool {
	return !c.existed || !bytes.Equal(c.Old, c.New) || (c.Undo && c.state.has()) || c.recordChanged()
}

// recordChanged reports whether setup would add to the record: servers moved again after
// the file was switched by hand.
func (c *Change) recordChanged() bool {
	if c.record == nil {
		return false
	}
	old := c.state.rec
	return old == nil || len(old.Moved) != len(c.record.Moved)
}

// PlanSetup works out how to switch the client file at path over to toolsift: the
// servers toolsift imports from it are replaced by one entry that starts toolsift, and
// everything else in the file stays as it was. A file that does not exist is created. An
// empty kind means Detect. The backup and the record of what moved go to opts.State.
func PlanSetup(path string, kind Kind, entry Entry, opts Options) (*Change, error) {
	if opts.State == "" {
		return nil, errors.New("no state folder to keep the backup in")
	}
	c, f, err := load(path, kind, opts)
	if err != nil {
		return nil, err
	}
	hasSelf := f.has(self)
	if c.state.backup != nil && !hasSelf {
		where := c.Backup
		if c.state.legacy != "" && c.state.rec == nil {
			where = c.state.legacy
		}
		return nil, fmt.Errorf("%s: %w (%s), but the file has no toolsift entry: restore the backup with setup --undo, or delete it first", path, ErrStaleBackup, where)
	}
	rec := &record{File: path, Kind: c.Kind}
	if c.state.rec != nil {
		rec.Backup = c.state.rec.Backup
		rec.Moved = slices.Clone(c.state.rec.Moved)
	}
	switch {
	case c.state.backup != nil:
		rec.Backup = digestOf(c.state.backup)
		if c.state.rec == nil {
			// An earlier version's backup beside the file moves to the state folder.
			c.backup = c.state.backup
		}
	case c.existed:
		rec.Backup, c.backup = digestOf(c.Old), c.Old
	default:
		rec.Backup = nil
	}
	for _, b := range f.blocks {
		for _, e := range b.entries {
			switch e.status {
			case imported:
				c.Moved = append(c.Moved, e.server)
				m := movedServer{Path: b.path, Key: e.key, Scope: b.scope, Raw: e.raw, Name: e.server.Name}
				if !slices.ContainsFunc(rec.Moved, func(o movedServer) bool { return slices.Equal(o.Path, m.Path) && o.Key == m.Key && o.Raw == m.Raw }) {
					rec.Moved = append(rec.Moved, m)
				}
			case skipped:
				c.Kept = append(c.Kept, e.key)
			}
		}
	}
	c.record = rec
	c.Warnings = f.imp.Warnings
	if err := f.rewrite(c, &entry); err != nil {
		return nil, err
	}
	// Said only of a change: a run that changes nothing says so, and no more.
	switch {
	case !c.Changed():
	case hasSelf && c.state.has() && len(c.Moved) > 0:
		c.Notes = append(c.Notes, "already switched to toolsift: the servers added since are moved too (undo puts them back)")
	case hasSelf && c.state.has():
		c.Notes = append(c.Notes, "already switched to toolsift: its entry is updated, and the backup of the original is left as it is")
	case hasSelf:
		c.Notes = append(c.Notes, "the toolsift entry already there is replaced")
	}
	if f.src.Kind == Gemini {
		if allowed := f.json.root.lookup("mcp", "allowed"); allowed != nil &&
			!slices.ContainsFunc(allowed.elems, func(n *jnode) bool { return n.text == EntryName }) {
			c.Notes = append(c.Notes, `mcp.allowed does not list "toolsift": Gemini CLI starts only the servers it lists, so add it there`)
		}
	}
	if err := c.verify(f, opts); err != nil {
		return nil, err
	}
	return c, nil
}

// PlanUndo works out how to switch the client file at path back: the backup setup made is
// restored byte for byte if the file is as setup left it; otherwise toolsift's entry is
// taken out and the servers setup moved are put back, keeping the file's other changes (a
// client such as Claude Code keeps its own state in the same file). Without a backup, the
// servers are put back from setup's record; without either, only toolsift's entry is taken
// out.
func PlanUndo(path string, kind Kind, opts Options) (*Change, error) {
	c, f, err := load(path, kind, opts)
	if err != nil {
		return nil, err
	}
	c.Undo = true
	c.Warnings = f.imp.Warnings
	if !c.state.has() {
		if !f.has(self) {
			return nil, fmt.Errorf("%s: %w: it has no toolsift entry and there is no backup %s", path, ErrNothingToUndo, c.Backup)
		}
		err = f.rewrite(c, nil)
		c.Snippet = "took out toolsift's entry; there is no backup (" + c.Backup + ") to restore"
		return c, err
	}
	var bak *file
	from := c.Backup
	if c.state.backup != nil {
		if c.state.rec == nil {
			from = c.state.legacy
		}
		if bak, err = parseFile(path, c.state.backup, f.src.Kind, opts); err != nil {
			return nil, fmt.Errorf("reading the backup %s: %w", from, err)
		}
	}
	extras := c.state.extras(bak)
	if bak != nil && len(extras) == 0 {
		if !c.existed {
			c.New = c.state.backup
			c.Snippet = "restored " + path + " from " + from
			return c, nil
		}
		// Is the file as setup left it? Then setup applied to the backup gives it back.
		if e, ok := f.selfEntry(); ok {
			if sw, err := switchedData(path, c.state.backup, f.src.Kind, e, opts); err == nil && bytes.Equal(sw, c.Old) {
				c.New = c.state.backup
				c.Snippet = "restored " + path + " byte for byte from " + from
				return c, nil
			}
		}
	}
	if !c.existed && bak != nil {
		// The file is gone: the backup is what the servers go back into.
		f = bak
	}
	var back []putBack
	if bak != nil {
		for _, bb := range bak.blocks {
			if bb.node == nil && bak.toml == nil {
				continue // a JSON block the backup does not have
			}
			for _, e := range bb.entries {
				if e.status != shadowed {
					back = append(back, putBack{path: bb.path, key: e.key, raw: e.raw, name: e.server.Name, scope: e.server.Scope})
				}
			}
		}
	}
	for _, m := range extras {
		back = append(back, putBack{path: m.Path, key: m.Key, raw: m.Raw, name: m.Name, scope: m.Scope})
	}
	if c.existed {
		c.Notes = append(c.Notes, "the file changed since setup: took out toolsift's entry and put back the servers setup moved, keeping the other changes")
	}
	if f.toml != nil {
		f.mergeTOML(c, back)
	} else {
		f.mergeJSON(c, back)
	}
	c.Snippet = fmt.Sprintf("put back %s from %s", countServers(len(c.Moved)), from)
	return c, nil
}

// putBack is a servers entry undo puts back where it was.
type putBack struct {
	path        []string
	key, raw    string
	name, scope string
}

func countServers(n int) string {
	if n == 1 {
		return "1 server"
	}
	return fmt.Sprintf("%d servers", n)
}

// rewrite writes c.New: the servers toolsift imports replaced by its entry, or with a nil
// entry only toolsift's entry taken out.
func (f *file) rewrite(c *Change, entry *Entry) error {
	if f.toml != nil {
		return f.switchTOML(c, entry)
	}
	f.switchJSON(c, entry)
	return nil
}

// putBack records that undo puts the entry e back in the client.
func (c *Change) putBack(e putBack) {
	c.Moved = append(c.Moved, Server{Name: e.name, Key: e.key, Scope: e.scope})
}

// switchedData is what PlanSetup writes for the contents data, without the checks that
// need the file system.
func switchedData(path string, data []byte, kind Kind, entry Entry, opts Options) ([]byte, error) {
	f, err := parseFile(path, data, kind, opts)
	if err != nil {
		return nil, err
	}
	c := &Change{File: path, Old: data, existed: true}
	err = f.rewrite(c, &entry)
	return c.New, err
}

// load reads the client file (if any) and what setup keeps of it.
func load(path string, kind Kind, opts Options) (*Change, *file, error) {
	c := &Change{File: path, mode: 0o600}
	if opts.State != "" {
		c.Backup = BackupPath(opts.State, path)
	}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		c.existed = true
		c.Old = data
		if st, err := os.Stat(path); err == nil {
			c.mode = st.Mode().Perm()
		}
	case errors.Is(err, fs.ErrNotExist):
		if kind == "" {
			if kind = kindFromName(path); kind == "" {
				return nil, nil, fmt.Errorf("%s does not exist and its name does not say which client it is for", path)
			}
		}
		if kind != Codex {
			// An empty object, which setup then writes the servers block into.
			data = []byte("{}\n")
		}
	default:
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	f, err := parseFile(path, data, kind, opts)
	if err != nil {
		return nil, nil, err
	}
	c.Kind = f.src.Kind
	if c.state, err = readState(opts.State, path, c.Kind, opts); err != nil {
		return nil, nil, err
	}
	c.Notes = append(c.Notes, c.state.problems...)
	return c, f, nil
}

// verify reads the rewrite back: toolsift's entry must be there, the moved servers gone,
// and everything outside the servers unchanged. It guards against a bug here costing a
// user their client's configuration.
func (c *Change) verify(old *file, opts Options) error {
	f, err := parseFile(c.File, c.New, c.Kind, opts)
	if err == nil && !f.has(self) {
		err = errors.New("toolsift's entry is missing")
	}
	if err == nil && f.has(imported) {
		err = errors.New("servers toolsift imports are left")
	}
	if err == nil && c.existed {
		err = sameOutside(old, f)
	}
	if err != nil {
		return fmt.Errorf("%s: rewriting it went wrong, nothing written (please report this): %w", c.File, err)
	}
	return nil
}

// sameOutside checks that two versions of a file have the same values outside the servers.
func sameOutside(old, new *file) error {
	var a, b map[string]any
	if new.toml != nil {
		a, b = maps.Clone(old.toml.tree), maps.Clone(new.toml.tree)
		delete(a, "mcp_servers")
		delete(b, "mcp_servers")
	} else {
		var ok bool
		if a, ok = old.json.root.value().(map[string]any); !ok {
			return nil
		}
		b, _ = new.json.root.value().(map[string]any)
		for _, bl := range slices.Concat(old.blocks, new.blocks) {
			deletePath(a, bl.path)
			deletePath(b, bl.path)
		}
	}
	if !reflect.DeepEqual(a, b) {
		return errors.New("keys outside the servers changed")
	}
	return nil
}

// deletePath deletes the value at path, and the objects on the way that it leaves empty
// (setup may have made them).
func deletePath(m map[string]any, path []string) {
	if len(path) > 1 {
		next, ok := m[path[0]].(map[string]any)
		if !ok {
			return
		}
		deletePath(next, path[1:])
		if len(next) == 0 {
			delete(m, path[0])
		}
		return
	}
	delete(m, path[0])
}
