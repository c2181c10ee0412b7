package clients

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// tomlDoc is a parsed Codex config.toml: its values, and where each server is written, so
// that setup can take servers out and leave every other line as it was.
type tomlDoc struct {
	tree map[string]any
	// order lists the server names in the order they first appear.
	order []string
	// spans are the byte ranges, whole lines, that define each server.
	spans map[string][][2]int
	// inline is set when the servers are one inline table (mcp_servers = {…}), which
	// cannot be edited line by line.
	inline bool
}

func parseTOML(file string, data []byte) (*tomlDoc, error) {
	var tree map[string]any
	if err := toml.Unmarshal(data, &tree); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			return nil, &SyntaxError{File: file, Line: line, Col: col, Msg: strings.TrimPrefix(de.Error(), "toml: ")}
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	d := &tomlDoc{tree: tree, spans: map[string][][2]int{}}
	see := func(name string) {
		if !slices.Contains(d.order, name) {
			d.order = append(d.order, name)
		}
	}
	var p unstable.Parser
	p.Reset(data)
	var table []string
	owner, start := "", 0 // the server whose [mcp_servers.NAME…] section is open
	closeSection := func(end int) {
		if owner != "" {
			d.spans[owner] = append(d.spans[owner], [2]int{start, trimSection(data, start, end)})
		}
		owner = ""
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			it := e.Key()
			it.Next()
			headerStart := lineStart(data, bytes.LastIndexByte(data[:it.Node().Raw.Offset], '['))
			closeSection(headerStart)
			table = keyParts(e.Key())
			if len(table) >= 2 && table[0] == "mcp_servers" {
				owner, start = table[1], commentsAbove(data, headerStart)
				see(owner)
			}
		case unstable.KeyValue:
			if owner != "" {
				continue
			}
			key := append(slices.Clone(table), keyParts(e.Key())...)
			if key[0] != "mcp_servers" {
				continue
			}
			if len(key) == 1 {
				d.inline = true
				it := e.Value().Children()
				for it.Next() {
					if it.Node().Kind == unstable.KeyValue {
						see(keyParts(it.Node().Key())[0])
					}
				}
				continue
			}
			see(key[1])
			r := e.Raw
			end := lineEnd(data, int(r.Offset+r.Length))
			d.spans[key[1]] = append(d.spans[key[1]], [2]int{lineStart(data, int(r.Offset)), end})
		}
	}
	closeSection(len(data))
	if err := p.Error(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return d, nil
}

// readTOML reads the [mcp_servers.NAME] tables of Codex's config.toml.
func (f *file) readTOML(opts Options) error {
	d, err := parseTOML(f.src.Path, f.data)
	if err != nil {
		return err
	}
	f.toml = d
	b := &block{path: []string{"mcp_servers"}, primary: true}
	f.blocks = []*block{b}
	raw, ok := d.tree["mcp_servers"]
	if !ok {
		return nil
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return &SyntaxError{File: f.src.Path, Msg: fmt.Sprintf("mcp_servers: want a table of servers by name, got %s", describe(raw))}
	}
	for _, name := range d.order {
		ref := entryRef{key: name}
		for _, sp := range d.spans[name] {
			ref.raw += string(f.data[sp[0]:sp[1]])
		}
		s, st := f.translate(name, "", servers[name], opts)
		ref.status = st
		f.finish(&s, st, &ref)
		b.entries = append(b.entries, ref)
	}
	return nil
}

// commentsAbove returns where the comment lines right above a table header start, if a blank
// line (or the start of the file) comes before them: such comments describe the table and
// go with it. Otherwise they may be the end of the table before, and stay.
func commentsAbove(data []byte, header int) int {
	start := header
	for start > 0 {
		prev := lineStart(data, start-1)
		line := strings.TrimSpace(string(data[prev:start]))
		if !strings.HasPrefix(line, "#") {
			if line == "" {
				return start
			}
			return header
		}
		start = prev
	}
	return start
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

// trimSection returns where a table section that runs from start to end (the next header)
// ends: comments and blank lines before the next header are left to it.
func trimSection(data []byte, start, end int) int {
	last := start
	for off := start; off < end; {
		next := lineEnd(data, off)
		if next > end {
			next = end
		}
		line := strings.TrimSpace(string(data[off:next]))
		if line != "" && !strings.HasPrefix(line, "#") {
			last = next
		}
		off = next
	}
	return last
}

func lineStart(data []byte, off int) int {
	return bytes.LastIndexByte(data[:off], '\n') + 1
}

func lineEnd(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}
