package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

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

// jsonString writes s as a JSON string literal. <, > and & are left as they are: escaping
// them, as encoding/json does by default for HTML, would make URLs hard to read.
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
	case Copilot:
		// Its own deferred loading would hide toolsift's tools behind a search of its own.
		fields = []string{`"type": "local"`, `"command": ` + jsonString(e.Command), `"args": ` + quoted(e.Args), `"tools": ["*"]`, `"deferTools": "never"`}
	default:
		fields = []string{`"command": ` + jsonString(e.Command), `"args": ` + quoted(e.Args)}
	}
	return jsonString(EntryName) + ": " + l.object(base, fields)
}

// switchJSON writes c.New: every servers block of f holding only the entries toolsift could
// not import, plus toolsift's entry in the primary block. With a nil entry it takes out
// toolsift's entry only.
func (f *file) switchJSON(c *Change, entry *Entry) {
	l := newLayout(f.data)
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
	c.New = applyEdits(f.data, edits)
}

// mergeJSON writes c.New for an undo of a file that changed since setup: toolsift's entry
// is taken out, and each servers block gets back the entries of back it no longer has. A
// block's comments are kept, each before the entry it stood before (those of toolsift's
// entry, and those at the block's end, at its end).
func (f *file) mergeJSON(c *Change, back []putBack) {
	l := newLayout(f.data)
	root := f.json.root
	var paths [][]string
	for _, b := range f.blocks {
		if b.node != nil && slices.ContainsFunc(b.entries, func(e entryRef) bool { return e.status == self }) {
			paths = append(paths, b.path)
		}
	}
	for _, pb := range back {
		if !slices.ContainsFunc(paths, func(p []string) bool { return slices.Equal(p, pb.path) }) {
			paths = append(paths, pb.path)
		}
	}
	var edits []edit
	for _, path := range paths {
		node := root.lookup(path...)
		var own []string // keys of toolsift's entries
		if b := f.block(path); b != nil {
			for _, e := range b.entries {
				if e.status == self {
					own = append(own, e.key)
				}
			}
		}
		var members, pending []string
		have := map[string]bool{}
		changed := false
		prev := 0
		if node != nil {
			if node.kind != jObject {
				continue
			}
			prev = node.start + 1
			for _, m := range node.members {
				lead := f.commentsBetween(prev, m.keyStart)
				prev = m.value.end
				if slices.Contains(own, m.key) {
					pending = append(pending, lead...)
					changed = true
					continue
				}
				have[m.key] = true
				members = append(members, l.withComments(append(pending, lead...), string(f.data[m.keyStart:m.value.end]), l.indentAt(m.keyStart)))
				pending = nil
			}
			pending = append(pending, f.commentsBetween(prev, node.end-1)...)
		}
		for _, pb := range back {
			if slices.Equal(pb.path, path) && !have[pb.key] {
				members = append(members, pb.raw)
				have[pb.key] = true
				c.putBack(pb)
				changed = true
			}
		}
		if !changed {
			continue
		}
		if node == nil {
			edits = append(edits, l.setPath(root, path, func(base string) string { return l.object(base, members) }))
			continue
		}
		base := l.indentAt(memberOf(root, path).keyStart)
		edits = append(edits, edit{node.start, node.end, l.objectWithTrailer(base, members, pending)})
	}
	c.New = applyEdits(f.data, edits)
}

// commentsBetween returns the text of the comments within data[from:to].
func (f *file) commentsBetween(from, to int) []string {
	var out []string
	for _, cm := range f.json.comments {
		if cm[0] >= from && cm[1] <= to {
			out = append(out, string(f.data[cm[0]:cm[1]]))
		}
	}
	return out
}

// withComments writes a member with its comments on lines of their own before it. indent is
// the indentation the member had, which a comment spanning lines keeps.
func (l jsonLayout) withComments(comments []string, member, indent string) string {
	if len(comments) == 0 {
		return member
	}
	var b strings.Builder
	for _, cm := range comments {
		b.WriteString(cm)
		b.WriteString("\n" + indent)
	}
	b.WriteString(member)
	return b.String()
}

// objectWithTrailer is object with comments on lines of their own before the closing brace.
func (l jsonLayout) objectWithTrailer(base string, members, trailer []string) string {
	if len(trailer) == 0 {
		return l.object(base, members)
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
	for _, cm := range trailer {
		b.WriteString(base + l.unit + cm + "\n")
	}
	b.WriteString(base + "}")
	return b.String()
}

// withoutSelf returns the text of the entries other than toolsift's own, and whether
// toolsift's own was among them.
func withoutSelf(entries []entryRef) (raws []string, hadSelf bool) {
	for _, e := range entries {
		if e.status == self {
			hadSelf = true
		} else {
			raws = append(raws, e.raw)
		}
	}
	return raws, hadSelf
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
