package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// The clients' JSON files are read by a small parser of our own rather than encoding/json:
// VS Code, Gemini CLI and opencode accept comments and trailing commas (JSONC), and setup
// rewrites one value of a file in place, which needs the byte offsets of every value so that
// the rest of the file — keys, their order, comments — stays exactly as it was.

type jkind uint8

const (
	jObject jkind = iota + 1
	jArray
	jString
	jNumber
	jBool
	jNull
)

func (k jkind) String() string {
	switch k {
	case jObject:
		return "an object"
	case jArray:
		return "a list"
	case jString:
		return "a string"
	case jNumber:
		return "a number"
	case jBool:
		return "a boolean"
	}
	return "null"
}

// jnode is one JSON value and where it is in the source: data[start:end].
type jnode struct {
	kind       jkind
	start, end int
	// text is a string's decoded value, a number's literal or "true"/"false".
	text    string
	members []jmember // jObject, in source order, duplicates included
	elems   []*jnode  // jArray
}

type jmember struct {
	key      string
	keyStart int // offset of the key's opening quote
	value    *jnode
}

// get returns the last member named key, as JavaScript's JSON.parse would keep it.
func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != jObject {
		return nil
	}
	for i := len(n.members) - 1; i >= 0; i-- {
		if n.members[i].key == key {
			return n.members[i].value
		}
	}
	return nil
}

// lookup follows a path of object keys.
func (n *jnode) lookup(path ...string) *jnode {
	for _, k := range path {
		n = n.get(k)
	}
	return n
}

// value converts the node to Go values: map[string]any, []any, string, float64, bool, nil.
func (n *jnode) value() any {
	switch n.kind {
	case jObject:
		m := make(map[string]any, len(n.members))
		for _, mem := range n.members {
			m[mem.key] = mem.value.value()
		}
		return m
	case jArray:
		l := make([]any, len(n.elems))
		for i, e := range n.elems {
			l[i] = e.value()
		}
		return l
	case jString:
		return n.text
	case jNumber:
		f, _ := strconv.ParseFloat(n.text, 64)
		return f
	case jBool:
		return n.text == "true"
	}
	return nil
}

// SyntaxError is a JSON (or TOML) file that cannot be read, located by line and column.
type SyntaxError struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// jdoc is a parsed JSONC file.
type jdoc struct {
	root *jnode
	// comments are the [start, end) ranges of every comment, for telling whether a rewrite
	// loses some.
	comments [][2]int
}

// maxDepth bounds nesting so that a hostile file cannot exhaust the stack.
const maxDepth = 1000

type jparser struct {
	file     string
	data     []byte
	pos      int
	depth    int
	comments [][2]int
}

// parseJSONC parses JSON with comments (// and /* */) and trailing commas. An empty file
// is an error: no client writes one, and reading it as "no servers" would hide a problem.
func parseJSONC(file string, data []byte) (*jdoc, error) {
	p := &jparser{file: file, data: data}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.pos = 3
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos == len(p.data) {
		return nil, &SyntaxError{File: file, Msg: "empty file: want a JSON object"}
	}
	root, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos < len(p.data) {
		return nil, p.errorf(p.pos, "unexpected %s after the end of the JSON value", p.what(p.pos))
	}
	return &jdoc{root: root, comments: p.comments}, nil
}

func (p *jparser) errorf(at int, format string, args ...any) error {
	line, col := lineCol(p.data, at)
	return &SyntaxError{File: p.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// lineCol returns the 1-based line and column (in bytes) of offset.
func lineCol(data []byte, offset int) (line, col int) {
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = offset - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// what describes the text at offset for an error message.
func (p *jparser) what(at int) string {
	if at >= len(p.data) {
		return "end of file"
	}
	c := p.data[at]
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte %#02x", c)
	}
	return fmt.Sprintf("'%c'", c)
}

// space skips whitespace and comments.
func (p *jparser) space() error {
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '/':
			start := p.pos
			end := bytes.IndexByte(p.data[p.pos:], '\n')
			if end < 0 {
				p.pos = len(p.data)
			} else {
				p.pos += end
			}
			p.comments = append(p.comments, [2]int{start, p.pos})
		case c == '/' && p.pos+1 < len(p.data) && p.data[p.pos+1] == '*':
			start := p.pos
			end := bytes.Index(p.data[p.pos+2:], []byte("*/"))
			if end < 0 {
				return p.errorf(start, "comment opened here is never closed with */")
			}
			p.pos += 2 + end + 2
			p.comments = append(p.comments, [2]int{start, p.pos})
		default:
			return nil
		}
	}
	return nil
}

func (p *jparser) value() (*jnode, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf(p.pos, "want a value, got end of file")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &jnode{kind: jString, start: start, end: p.pos, text: s}, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, lit := range []struct {
		word string
		kind jkind
	}{{"true", jBool}, {"false", jBool}, {"null", jNull}} {
		if bytes.HasPrefix(p.data[p.pos:], []byte(lit.word)) {
			p.pos += len(lit.word)
			return &jnode{kind: lit.kind, start: start, end: p.pos, text: lit.word}, nil
		}
	}
	if p.data[p.pos] == '\'' {
		return nil, p.errorf(p.pos, "strings take double quotes, not single quotes")
	}
	return nil, p.errorf(p.pos, "want a value, got %s", p.what(p.pos))
}

func (p *jparser) enter(at int) error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf(at, "nested more than %d deep", maxDepth)
	}
	return nil
}

func (p *jparser) object() (*jnode, error) {
	n := &jnode{kind: jObject, start: p.pos}
	if err := p.enter(p.pos); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // {
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if p.pos >= len(p.data) {
			return nil, p.errorf(n.start, "object opened here is never closed with }")
		}
		if p.data[p.pos] != '"' {
			return nil, p.errorf(p.pos, "want a key in double quotes or }, got %s", p.what(p.pos))
		}
		keyStart := p.pos
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf(p.pos, "want : after the key %q, got %s", key, p.what(p.pos))
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, jmember{key: key, keyStart: keyStart, value: v})
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			continue
		}
		if p.pos >= len(p.data) {
			return nil, p.errorf(n.start, "object opened here is never closed with }")
		}
		return nil, p.errorf(p.pos, "want , or } after the value of %q, got %s (a missing comma?)", key, p.what(p.pos))
	}
}

func (p *jparser) array() (*jnode, error) {
	n := &jnode{kind: jArray, start: p.pos}
	if err := p.enter(p.pos); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	p.pos++ // [
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			n.end = p.pos
			return n, nil
		}
		if p.pos >= len(p.data) {
			return nil, p.errorf(n.start, "list opened here is never closed with ]")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.data) && p.data[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			continue
		}
		if p.pos >= len(p.data) {
			return nil, p.errorf(n.start, "list opened here is never closed with ]")
		}
		return nil, p.errorf(p.pos, "want , or ] after a list element, got %s (a missing comma?)", p.what(p.pos))
	}
}

// str reads a double-quoted string at p.pos and returns its decoded value.
func (p *jparser) str() (string, error) {
	start := p.pos
	i := p.pos + 1
	for ; i < len(p.data); i++ {
		c := p.data[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '"' {
			break
		}
		if c == '\n' {
			return "", p.errorf(start, "string is not closed on its line (a missing \"?)")
		}
	}
	if i >= len(p.data) {
		return "", p.errorf(start, "string is never closed with \"")
	}
	raw := p.data[start : i+1]
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", p.errorf(start, "invalid string %s: %v", raw, err)
	}
	p.pos = i + 1
	return s, nil
}

func (p *jparser) number() (*jnode, error) {
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.pos++
			continue
		}
		break
	}
	text := string(p.data[start:p.pos])
	if !json.Valid([]byte(text)) {
		return nil, p.errorf(start, "invalid number %q", text)
	}
	return &jnode{kind: jNumber, start: start, end: p.pos, text: text}, nil
}
