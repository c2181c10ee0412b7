package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Entry is a server to add to a configuration file: a stdio server (Command, Args, Env) or a
// remote one (Type, URL, Headers).
type Entry struct {
	Command string
	Args    []string
	Env     map[string]string
	Type    string // http or sse, for a URL
	URL     string
	Headers map[string]string
}

// ErrExists is returned by AddServer for a name the file already has.
var ErrExists = errors.New("already in the configuration")

// AddServer returns the configuration text data with the server name added to its
// mcpServers, and every other byte as it was: comments, order and layout are the user's.
// A file whose mcpServers is written in flow style (JSON) is written again whole, in the same
// style.
func AddServer(data []byte, name string, e Entry) ([]byte, error) {
	return addNode(data, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name}, entryNode(e))
}

// MergeServers returns the configuration text data with the servers of the configuration
// text from that it lacks (by name) added as AddServer adds one, each with its comments,
// and their names.
func MergeServers(data, from []byte) ([]byte, []string, error) {
	_, theirs, err := serversNode(from)
	if err != nil {
		return nil, nil, err
	}
	if theirs == nil || theirs.Kind != yaml.MappingNode {
		return data, nil, nil
	}
	var added []string
	for i := 0; i+1 < len(theirs.Content); i += 2 {
		key, entry := theirs.Content[i], theirs.Content[i+1]
		out, err := addNode(data, key, entry)
		if errors.Is(err, ErrExists) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		data = out
		added = append(added, key.Value)
	}
	return data, added, nil
}

// addNode adds the server key: entry to data's mcpServers (see AddServer).
func addNode(data []byte, key, entry *yaml.Node) ([]byte, error) {
	doc, servers, err := serversNode(data)
	if err != nil {
		return nil, err
	}
	name := key.Value
	if servers != nil && servers.Kind == yaml.MappingNode && keyIndex(servers, name) >= 0 {
		return nil, fmt.Errorf("server %q is %w", name, ErrExists)
	}
	switch {
	case servers == nil:
		// No mcpServers key: append one.
		text, err := encodeBlock(mapping(key, entry), 2)
		if err != nil {
			return nil, err
		}
		out := bytes.TrimRight(data, "\n")
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, "mcpServers:\n"...)
		return append(out, text...), nil
	case servers.Kind == yaml.MappingNode && servers.Style&yaml.FlowStyle == 0 && len(servers.Content) > 0:
		// The usual case: insert after the last server, at the servers' indentation.
		text, err := encodeBlock(mapping(key, entry), servers.Content[0].Column-1)
		if err != nil {
			return nil, err
		}
		return insertAfterLine(data, lastLine(servers), text), nil
	case servers.Kind == yaml.MappingNode || servers.Kind == yaml.ScalarNode && servers.Tag == "!!null":
		// Flow style, empty, or null: the document is written again whole.
		if servers.Kind == yaml.ScalarNode {
			*servers = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		servers.Content = append(servers.Content, key, entry)
		return encodeDoc(doc)
	default:
		return nil, fmt.Errorf("mcpServers is not a mapping of server names: fix the file first")
	}
}

// AddProjectServer is AddServer for the servers toolsift serves only in the folder dir:
// those of projects.DIR.mcpServers, made if the file lacks them.
func AddProjectServer(data []byte, dir, name string, e Entry) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the configuration does not parse; fix it first: %w", err)
	}
	path := []string{"projects", dir, "mcpServers"}
	key, entry := strNode(name), entryNode(e)
	if len(doc.Content) == 0 {
		text, err := nested(path, key, entry, 0)
		return append([]byte("mcpServers: {}\n"), text...), err
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, errors.New("the configuration is not a mapping with an mcpServers key: fix it first")
	}
	for i, p := range path {
		j := keyIndex(m, p)
		if j < 0 {
			value := mapping(key, entry)
			for k := len(path) - 1; k > i; k-- {
				value = mapping(strNode(path[k]), value)
			}
			return insertInto(data, &doc, m, strNode(p), value)
		}
		next := m.Content[j+1]
		if next.Kind == yaml.ScalarNode && next.Tag == "!!null" {
			*next = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		if next.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s is not a mapping: fix the file first", strings.Join(path[:i+1], "."))
		}
		m = next
	}
	if keyIndex(m, name) >= 0 {
		return nil, fmt.Errorf("server %q of project %s is %w", name, dir, ErrExists)
	}
	return insertInto(data, &doc, m, key, entry)
}

// nested is path's mappings, around key: entry, as the text of a whole file.
func nested(path []string, key, entry *yaml.Node, indent int) ([]byte, error) {
	value := mapping(key, entry)
	for k := len(path) - 1; k >= 0; k-- {
		value = mapping(strNode(path[k]), value)
	}
	return encodeBlock(value, indent)
}

// insertInto adds key: value to the mapping m of doc: after m's last line, at its keys'
// indentation, when m is in block style; else by writing doc again.
func insertInto(data []byte, doc, m, key, value *yaml.Node) ([]byte, error) {
	if m.Style&yaml.FlowStyle == 0 && len(m.Content) > 0 {
		text, err := encodeBlock(mapping(key, value), m.Content[0].Column-1)
		if err != nil {
			return nil, err
		}
		return insertAfterLine(data, lastLine(m), text), nil
	}
	m.Style &^= yaml.FlowStyle
	if len(m.Content) > 0 {
		m.Style |= yaml.FlowStyle
	}
	m.Content = append(m.Content, key, value)
	return encodeDoc(doc)
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// RemoveServer returns the configuration text data without the server name, and the rest
// of the file as it was, the server's own comment lines aside.
func RemoveServer(data []byte, name string) ([]byte, error) {
	doc, servers, err := serversNode(data)
	if err != nil {
		return nil, err
	}
	if servers == nil || servers.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("server %q is not in the configuration (it has no servers)", name)
	}
	return removeFrom(data, doc, servers, name, "")
}

// RemoveProjectServer is RemoveServer for a server of the project dir.
func RemoveProjectServer(data []byte, dir, name string) ([]byte, error) {
	doc, _, err := serversNode(data)
	if err != nil {
		return nil, err
	}
	var servers *yaml.Node
	if len(doc.Content) > 0 {
		servers = doc.Content[0]
		for _, p := range []string{"projects", dir, "mcpServers"} {
			if i := keyIndex(servers, p); i >= 0 && servers.Content[i+1].Kind == yaml.MappingNode {
				servers = servers.Content[i+1]
			} else {
				return nil, fmt.Errorf("server %q is not in the configuration (it has no servers for project %s)", name, dir)
			}
		}
	}
	return removeFrom(data, doc, servers, name, " for project "+dir)
}

// removeFrom takes the server name out of the mapping servers of doc, whose text is data.
func removeFrom(data []byte, doc, servers *yaml.Node, name, where string) ([]byte, error) {
	i := keyIndex(servers, name)
	if i < 0 {
		return nil, fmt.Errorf("server %q is not in the configuration%s; it has: %s", name, where, strings.Join(ServerNames(servers), ", "))
	}
	if servers.Style&yaml.FlowStyle != 0 || len(servers.Content) == 2 {
		// Flow style (JSON), or the last server, which leaves an empty mapping ({}): the
		// document is written again whole.
		servers.Content = slices.Delete(servers.Content, i, i+2)
		servers.Style |= yaml.FlowStyle
		return encodeDoc(doc)
	}
	key := servers.Content[i]
	first := key.Line - strings.Count(key.HeadComment, "\n") - boolInt(key.HeadComment != "")
	last := lastLine(servers.Content[i+1])
	if i+2 < len(servers.Content) {
		next := servers.Content[i+2]
		last = next.Line - strings.Count(next.HeadComment, "\n") - boolInt(next.HeadComment != "") - 1
	}
	return deleteLines(data, first, last), nil
}

// ServerNames returns the names of the servers of an mcpServers mapping node, in order.
func ServerNames(servers *yaml.Node) []string {
	var names []string
	for i := 0; i+1 < len(servers.Content); i += 2 {
		names = append(names, servers.Content[i].Value)
	}
	return names
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// serversNode parses data and returns its document and the value of its mcpServers key, nil
// if it has none.
func serversNode(data []byte) (*yaml.Node, *yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("the configuration does not parse; fix it first: %w", err)
	}
	if len(doc.Content) == 0 {
		return &doc, nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, errors.New("the configuration is not a mapping with an mcpServers key: fix it first")
	}
	if i := keyIndex(root, "mcpServers"); i >= 0 {
		return &doc, root.Content[i+1], nil
	}
	return &doc, nil, nil
}

func keyIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// lastLine returns the last line any node of n's tree is on.
func lastLine(n *yaml.Node) int {
	last := n.Line
	for _, c := range n.Content {
		last = max(last, lastLine(c))
	}
	if n.Kind == yaml.ScalarNode && (n.Style&(yaml.LiteralStyle|yaml.FoldedStyle)) != 0 {
		last += strings.Count(strings.TrimRight(n.Value, "\n"), "\n") + 1
	}
	return last
}

// entryNode is e as a YAML mapping: lists and maps in flow style, as import writes them.
func entryNode(e Entry) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add := func(k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
	strMap := func(kv map[string]string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
		keys := make([]string, 0, len(kv))
		for k := range kv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			n.Content = append(n.Content, str(k), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: kv[k], Style: yaml.DoubleQuotedStyle})
		}
		return n
	}
	if e.URL != "" {
		if e.Type != "" {
			add("type", str(e.Type))
		}
		add("url", str(e.URL))
		if len(e.Headers) > 0 {
			add("headers", strMap(e.Headers))
		}
		return m
	}
	add("command", str(e.Command))
	if len(e.Args) > 0 {
		args := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, a := range e.Args {
			args.Content = append(args.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: a, Style: yaml.DoubleQuotedStyle})
		}
		add("args", args)
	}
	if len(e.Env) > 0 {
		add("env", strMap(e.Env))
	}
	return m
}

func mapping(k, v *yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{k, v}}
}

// encodeBlock encodes n in block style, each line indented by indent spaces.
func encodeBlock(n *yaml.Node, indent int) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	pad := strings.Repeat(" ", indent)
	var out bytes.Buffer
	for line := range strings.Lines(b.String()) {
		out.WriteString(pad + line)
	}
	return out.Bytes(), nil
}

func encodeDoc(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// insertAfterLine inserts text after line n (1-based) of data.
func insertAfterLine(data []byte, n int, text []byte) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var out []byte
	for i, l := range lines {
		out = append(out, l...)
		if i+1 == n {
			if len(l) > 0 && l[len(l)-1] != '\n' {
				out = append(out, '\n')
			}
			out = append(out, text...)
		}
	}
	if n > len(lines) {
		out = append(out, text...)
	}
	return out
}

// deleteLines removes lines first to last (1-based, inclusive) of data.
func deleteLines(data []byte, first, last int) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var out []byte
	for i, l := range lines {
		if i+1 < first || i+1 > last {
			out = append(out, l...)
		}
	}
	return out
}
