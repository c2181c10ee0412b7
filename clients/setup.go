package clients

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// EntryName is the name of toolsift's entry in a client's configuration.
const EntryName = "toolsift"

// BackupSuffix is added to a client file's name for the copy setup keeps of it.
const BackupSuffix = ".toolsift-backup"

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
	ErrChanged = errors.New("changed while toolsift was rewriting it")
)

// Change is a rewrite of one client file by setup or by its undo, worked out before
// anything is written; Apply writes it.
type Change struct {
	File   string
	Kind   Kind
	Backup string
	// Undo is set for a change that restores the file and removes the backup.
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
	// Notes are for the user: comments lost, an entry replaced, a merge instead of a copy.
	Notes []string

	existed      bool
	backupExists bool
	mode         fs.FileMode
}

// Changed reports whether Apply would write anything.
func (c *Change) Changed() bool {
	return !c.existed || !bytes.Equal(c.Old, c.New) || (c.Undo && c.backupExists)
}

// PlanSetup works out how to switch the client file at path over to toolsift: the
// servers toolsift imports from it are replaced by one entry that starts toolsift, and
// everything else in the file stays as it was. A file that does not exist is created. An
// empty kind means Detect.
func PlanSetup(path string, kind Kind, entry Entry, opts Options) (*Change, error) {
	c, f, err := load(path, kind, opts, false)
	if err != nil {
		return nil, err
	}
	hasSelf := f.has(self)
	if c.backupExists && !hasSelf {
		return nil, fmt.Errorf("%s: %w (%s), but the file has no toolsift entry: restore the backup or delete it first", path, ErrStaleBackup, c.Backup)
	}
	for _, b := range f.blocks {
		for _, e := range b.entries {
			switch e.status {
			case imported:
				c.Moved = append(c.Moved, e.server)
			case skipped:
				c.Kept = append(c.Kept, e.key)
			}
		}
	}
	c.Warnings = f.imp.Warnings
	switch {
	case hasSelf && c.backupExists:
		c.Notes = append(c.Notes, "already switched to toolsift: its entry is rewritten, and the backup of the original is left as it is")
	case hasSelf:
		c.Notes = append(c.Notes, "the toolsift entry already there is replaced")
	}
	if f.toml != nil {
		err = f.switchTOML(c, &entry)
	} else {
		err = f.switchJSON(c, &entry)
	}
	if err != nil {
		return nil, err
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
// taken out and the backup's servers are put back, keeping the file's other changes (a
// client such as Claude Code keeps its own state in the same file). Without a backup, only
// toolsift's entry is taken out.
func PlanUndo(path string, kind Kind, opts Options) (*Change, error) {
	c, f, err := load(path, kind, opts, true)
	if err != nil {
		return nil, err
	}
	c.Undo = true
	c.Warnings = f.imp.Warnings
	if !c.backupExists {
		if !f.has(self) {
			return nil, fmt.Errorf("%s: %w: it has no toolsift entry and there is no backup %s", path, ErrNothingToUndo, c.Backup)
		}
		if f.toml != nil {
			err = f.switchTOML(c, nil)
		} else {
			err = f.switchJSON(c, nil)
		}
		c.Snippet = "took out toolsift's entry; there is no backup (" + c.Backup + ") to restore"
		return c, err
	}
	bak, err := os.ReadFile(c.Backup)
	if err != nil {
		return nil, fmt.Errorf("reading the backup: %w", err)
	}
	if !c.existed {
		c.New = bak
		c.Snippet = "restored " + path + " from " + c.Backup
		return c, nil
	}
	// Is the file as setup left it? Then setup applied to the backup gives it back.
	if e, ok := f.selfEntry(); ok {
		if sw, err := switchedData(path, bak, f.src.Kind, e, opts); err == nil && bytes.Equal(sw, c.Old) {
			c.New = bak
			c.Snippet = "restored " + path + " byte for byte from " + c.Backup
			return c, nil
		}
	}
	bf, err := parseFile(path, bak, f.src.Kind, opts, true)
	if err != nil {
		return nil, fmt.Errorf("reading the backup: %w", err)
	}
	c.Notes = append(c.Notes, "the file changed since setup: took out toolsift's entry and put back the backup's servers, keeping the other changes")
	if f.toml != nil {
		err = f.mergeTOML(c, bf)
	} else {
		err = f.mergeJSON(c, bf)
	}
	return c, err
}

// switchedData is what PlanSetup writes for the contents data, without the checks that
// need the file system.
func switchedData(path string, data []byte, kind Kind, entry Entry, opts Options) ([]byte, error) {
	f, err := parseFile(path, data, kind, opts, false)
	if err != nil {
		return nil, err
	}
	c := &Change{File: path, Old: data, existed: true}
	if f.toml != nil {
		err = f.switchTOML(c, &entry)
	} else {
		err = f.switchJSON(c, &entry)
	}
	return c.New, err
}

// load reads the client file (if any) and its backup's presence.
func load(path string, kind Kind, opts Options, allProjects bool) (*Change, *file, error) {
	c := &Change{File: path, Backup: path + BackupSuffix, mode: 0o600}
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
			data = []byte("{}\n")
		}
	default:
		return nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if _, err := os.Lstat(c.Backup); err == nil {
		c.backupExists = true
	}
	f, err := parseFile(path, data, kind, opts, allProjects)
	if err != nil {
		return nil, nil, err
	}
	c.Kind = f.src.Kind
	if !c.existed {
		f.data = nil // written from scratch, not from the placeholder
	}
	return c, f, nil
}

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

// verify reads the rewrite back: toolsift's entry must be there, the moved servers gone,
// and everything outside the servers unchanged. It guards against a bug here costing a
// user their client's configuration.
func (c *Change) verify(old *file, opts Options) error {
	f, err := parseFile(c.File, c.New, c.Kind, opts, false)
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
		a, b = old.toml.tree, new.toml.tree
		a, b = maps.Clone(a), maps.Clone(b)
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

// edit replaces data[start:end] with text.
type edit struct {
	start, end int
	text       string
}

func applyEdits(data []byte, edits []edit) []byte {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := slices.Clone(data)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}
	return out
}

// jsonLayout is how a JSON file indents.
type jsonLayout struct {
	data []byte
	unit string
}

func newLayout(data []byte) jsonLayout {
	l := jsonLayout{data: data, unit: "  "}
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			l.unit = line[:len(line)-len(trimmed)]
			break
		}
	}
	return l
}

// indentAt is the indentation of the line offset is on.
func (l jsonLayout) indentAt(offset int) string {
	start := lineStart(l.data, offset)
	line := l.data[start:]
	return string(line[:len(line)-len(bytes.TrimLeft(line, " \t"))])
}

// object writes members (each `"key": value`) as an object whose closing brace is at base.
func (l jsonLayout) object(base string, members []string) string {
	if len(members) == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{\n")
	for i, m := range members {
		b.WriteString(base + l.unit + m)
		if i < len(members)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString(base + "}")
	return b.String()
}

func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// entryJSON writes toolsift's entry for a client, at indentation base.
func (l jsonLayout) entryJSON(kind Kind, e Entry, base string) string {
	var fields []string
	quoted := func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = jsonString(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	switch kind {
	case VSCode:
		fields = []string{`"type": "stdio"`, `"command": ` + jsonString(e.Command), `"args": ` + quoted(e.Args)}
	case OpenCode:
		fields = []string{`"type": "local"`, `"command": ` + quoted(append([]string{e.Command}, e.Args...))}
	default:
		fields = []string{`"command": ` + jsonString(e.Command), `"args": ` + quoted(e.Args)}
	}
	return jsonString(EntryName) + ": " + l.object(base, fields)
}

// switchJSON writes c.New: every servers block of f holding only the entries toolsift could
// not import, plus toolsift's entry in the primary block. With a nil entry it takes out
// toolsift's entry only.
func (f *file) switchJSON(c *Change, entry *Entry) error {
	data := f.data
	if data == nil {
		data = []byte("{}\n")
	}
	l := newLayout(data)
	root := f.json.root
	var edits []edit
	for _, b := range f.blocks {
		changes := b.primary && entry != nil
		var keep []string
		var spans [][2]int
		for _, e := range b.entries {
			if e.status == skipped || (entry == nil && e.status == imported) {
				keep = append(keep, e.raw)
				spans = append(spans, e.span)
			} else {
				changes = true
			}
		}
		if !changes {
			continue
		}
		build := func(base string) string {
			members := slices.Clone(keep)
			if b.primary && entry != nil {
				members = append(members, l.entryJSON(f.src.Kind, *entry, base+l.unit))
			}
			return l.object(base, members)
		}
		if b.node == nil {
			edits = append(edits, l.setPath(root, b.path, build))
		} else {
			base := l.indentAt(memberOf(root, b.path).keyStart)
			text := build(base)
			edits = append(edits, edit{b.node.start, b.node.end, text})
			if b.primary {
				c.Snippet = base + jsonString(b.path[len(b.path)-1]) + ": " + text
			}
			if lost := commentsIn(f.json.comments, b.node, spans); lost {
				c.Notes = append(c.Notes, fmt.Sprintf("comments inside %s are not kept (the rest of the file is unchanged); the backup has them", strings.Join(b.path, ".")))
			}
		}
	}
	if c.Snippet == "" && entry != nil {
		c.Snippet = jsonString(f.blocks[0].path[len(f.blocks[0].path)-1]) + ": " + l.object("", []string{l.entryJSON(f.src.Kind, *entry, l.unit)})
	}
	c.New = applyEdits(data, edits)
	return nil
}

// commentsIn reports whether n has comments outside the spans that are kept.
func commentsIn(comments [][2]int, n *jnode, kept [][2]int) bool {
	for _, cm := range comments {
		if cm[0] < n.start || cm[1] > n.end {
			continue
		}
		if !slices.ContainsFunc(kept, func(sp [2]int) bool { return cm[0] >= sp[0] && cm[1] <= sp[1] }) {
			return true
		}
	}
	return false
}

// memberOf returns the member that path leads to.
func memberOf(root *jnode, path []string) *jmember {
	parent := root.lookup(path[:len(path)-1]...)
	if parent == nil {
		return nil
	}
	for i := len(parent.members) - 1; i >= 0; i-- {
		if parent.members[i].key == path[len(path)-1] {
			return &parent.members[i]
		}
	}
	return nil
}

// setPath inserts the value build writes at path, creating the objects on the way, into
// the deepest object of path that exists.
func (l jsonLayout) setPath(root *jnode, path []string, build func(base string) string) edit {
	obj, depth := root, 0
	for depth < len(path)-1 {
		next := obj.get(path[depth])
		if next == nil || next.kind != jObject {
			break
		}
		obj, depth = next, depth+1
	}
	rest := path[depth:]
	// value writes rest[i:] as nested objects whose member key rest[i] sits at base.
	var value func(i int, base string) string
	value = func(i int, base string) string {
		if i == len(rest)-1 {
			return jsonString(rest[i]) + ": " + build(base)
		}
		return jsonString(rest[i]) + ": " + l.object(base, []string{value(i+1, base+l.unit)})
	}
	objBase := l.indentAt(obj.start)
	if obj == root {
		objBase = ""
	}
	if len(obj.members) == 0 {
		return edit{obj.start, obj.end, l.object(objBase, []string{value(0, objBase+l.unit)})}
	}
	last := obj.members[len(obj.members)-1]
	base := l.indentAt(last.keyStart)
	return edit{last.value.end, last.value.end, ",\n" + base + value(0, base)}
}

// mergeJSON writes c.New for an undo of a file that changed since setup: each servers block
// loses toolsift's entry and gets back the backup's entries it no longer has.
func (f *file) mergeJSON(c *Change, bak *file) error {
	l := newLayout(f.data)
	root := f.json.root
	var edits []edit
	for _, bb := range bak.blocks {
		if bb.node == nil {
			continue
		}
		cur := f.block(bb.path)
		var members []string
		have := map[string]bool{}
		if cur != nil && cur.node != nil {
			for _, e := range cur.entries {
				if e.status != self {
					members = append(members, e.raw)
				}
				have[e.key] = true
			}
		}
		var back []string
		for _, e := range bb.entries {
			if e.status != shadowed && !have[e.key] {
				members = append(members, e.raw)
				back = append(back, e.key)
				have[e.key] = true
				c.Moved = append(c.Moved, Server{Name: e.server.Name, Key: e.key, Scope: e.server.Scope})
			}
		}
		if len(back) == 0 && (cur == nil || !slices.ContainsFunc(cur.entries, func(e entryRef) bool { return e.status == self })) {
			continue
		}
		build := func(base string) string { return l.object(base, members) }
		if cur == nil || cur.node == nil {
			edits = append(edits, l.setPath(root, bb.path, build))
		} else {
			edits = append(edits, edit{cur.node.start, cur.node.end, build(l.indentAt(memberOf(root, bb.path).keyStart))})
		}
	}
	// toolsift's entry in a block the backup does not have.
	for _, b := range f.blocks {
		if bak.block(b.path) != nil && bak.block(b.path).node != nil || b.node == nil {
			continue
		}
		var members []string
		for _, e := range b.entries {
			if e.status != self {
				members = append(members, e.raw)
			}
		}
		if len(members) < len(b.entries) {
			edits = append(edits, edit{b.node.start, b.node.end, l.object(l.indentAt(memberOf(root, b.path).keyStart), members)})
		}
	}
	c.New = applyEdits(f.data, edits)
	c.Snippet = fmt.Sprintf("put back %d servers from %s", len(c.Moved), c.Backup)
	return nil
}

func (f *file) block(path []string) *block {
	for _, b := range f.blocks {
		if slices.Equal(b.path, path) {
			return b
		}
	}
	return nil
}

// switchTOML writes c.New for Codex: the tables of the servers toolsift imports, and of
// its own entry, are cut out and toolsift's table is added at the end. With a nil entry it
// cuts out toolsift's entry only.
func (f *file) switchTOML(c *Change, entry *Entry) error {
	var cut [][2]int
	for _, e := range f.blocks[0].entries {
		if e.status == self || (entry != nil && e.status == imported) {
			cut = append(cut, f.toml.spans[e.key]...)
		}
	}
	if f.toml.inline && (len(cut) > 0 || entry != nil) {
		return fmt.Errorf("%s: mcp_servers is written as one inline table, which toolsift does not rewrite: write each server as a [mcp_servers.NAME] table, then run setup again", f.src.Path)
	}
	out := cutSpans(f.data, cut)
	if entry != nil {
		c.Snippet = tomlSection(*entry)
		out = appendSection(out, c.Snippet)
	}
	c.New = out
	return nil
}

// mergeTOML writes c.New for an undo of a Codex file that changed since setup.
func (f *file) mergeTOML(c *Change, bak *file) error {
	var cut [][2]int
	have := map[string]bool{}
	for _, e := range f.blocks[0].entries {
		if e.status == self {
			cut = append(cut, f.toml.spans[e.key]...)
		}
		have[e.key] = true
	}
	out := cutSpans(f.data, cut)
	for _, e := range bak.blocks[0].entries {
		if !have[e.key] && e.raw != "" {
			out = appendSection(out, e.raw)
			c.Moved = append(c.Moved, Server{Name: e.server.Name, Key: e.key, Scope: e.server.Scope})
		}
	}
	c.New = out
	c.Snippet = fmt.Sprintf("put back %d servers from %s", len(c.Moved), c.Backup)
	return nil
}

// Apply writes the change: the backup first (setup, when there is none yet), then the file,
// atomically and with its permissions; an undo then removes the backup. A file that
// changed since it was read is not overwritten.
func (c *Change) Apply() error {
	if !c.Changed() {
		return nil
	}
	target := c.File
	if resolved, err := filepath.EvalSymlinks(c.File); err == nil {
		// Writing through a symlink (dotfiles kept in a repository) keeps the link.
		target = resolved
	}
	now, err := os.ReadFile(target)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", c.File, err)
	}
	if (err == nil) != c.existed || !bytes.Equal(now, c.Old) {
		return fmt.Errorf("%s %w; nothing written: run it again", c.File, ErrChanged)
	}
	if !c.Undo && c.existed && !c.backupExists {
		if err := writeNew(c.Backup, c.Old, c.mode); err != nil {
			return fmt.Errorf("writing the backup: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return fmt.Errorf("writing %s: %w", c.File, err)
	}
	if err := WriteFileAtomic(target, c.New, c.mode); err != nil {
		return err
	}
	if c.Undo && c.backupExists {
		if err := os.Remove(c.Backup); err != nil {
			return fmt.Errorf("removing the backup: %w", err)
		}
	}
	return nil
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// WriteFileAtomic replaces path with data, with permissions mode: it writes a temporary file
// beside it and renames it over path, so that a reader sees the old file or the new one,
// never half of one.
func WriteFileAtomic(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".toolsift-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		return fail(err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
