package clients

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

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

// mergeTOML writes c.New for an undo of a Codex file that changed since setup: toolsift's
// table is cut out, and the tables of back the file no longer has are added at the end.
func (f *file) mergeTOML(c *Change, back []putBack) {
	var cut [][2]int
	have := map[string]bool{}
	for _, e := range f.blocks[0].entries {
		if e.status == self {
			cut = append(cut, f.toml.spans[e.key]...)
		}
		have[e.key] = true
	}
	out := cutSpans(f.data, cut)
	for _, pb := range back {
		if !have[pb.key] && pb.raw != "" {
			out = appendSection(out, pb.raw)
			have[pb.key] = true
			c.putBack(pb)
		}
	}
	c.New = out
}

// tomlSection is toolsift's entry as a Codex table.
func tomlSection(entry Entry) string {
	args := make([]string, len(entry.Args))
	for i, a := range entry.Args {
		args[i] = tomlQuote(a)
	}
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [%s]\n", EntryName, tomlQuote(entry.Command), strings.Join(args, ", "))
}

// tomlQuote writes s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cutSpans removes byte ranges (and the blank lines right after each) from data.
func cutSpans(data []byte, spans [][2]int) []byte {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var out []byte
	pos := 0
	for _, sp := range spans {
		if sp[0] < pos {
			sp[0] = pos
		}
		if sp[1] <= pos {
			continue
		}
		out = append(out, data[pos:sp[0]]...)
		end := sp[1]
		for end < len(data) {
			next := lineEnd(data, end)
			if strings.TrimSpace(string(data[end:next])) != "" {
				break
			}
			end = next
		}
		pos = end
	}
	return append(out, data[pos:]...)
}

// appendSection adds a table at the end of a TOML file, after a blank line.
func appendSection(data []byte, section string) []byte {
	out := slices.Clone(data)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	if len(bytes.TrimSpace(out)) > 0 && !bytes.HasSuffix(out, []byte("\n\n")) {
		out = append(out, '\n')
	}
	return append(out, section...)
}
