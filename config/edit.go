package config

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrExists is returned by AddServer for a name the file already has.
var ErrExists = errors.New("already in the configuration")

// AddServer returns the configuration text data with the server name added to its
// mcpServers, and every other byte as it was: comments, order and layout are the user's.
// A file whose mcpServers is written in flow style (JSON) is written again whole, in the same
// style.
func AddServer(data []byte, name string, e Entry) ([]byte, error) {
	return addAt(data, serversPath(""), strNode(name), entryNode(e))
}

// AddProjectServer is AddServer for the servers toolsift serves only in the folder dir:
// those of projects.DIR.mcpServers, made if the file lacks them.
func AddProjectServer(data []byte, dir, name string, e Entry) ([]byte, error) {
	return addAt(data, serversPath(dir), strNode(name), entryNode(e))
}

// MergeServers returns the configuration text data with the servers of the configuration
// text from that it lacks (by name, every folder's and each project's) added as AddServer
// adds one, each with its comments, and their names ("pg of project /home/me/app" for a
// project's).
func MergeServers(data, from []byte) ([]byte, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(from, &doc); err != nil {
		return nil, nil, fmt.Errorf("the configuration does not parse; fix it first: %w", err)
	}
	if len(doc.Content) == 0 {
		return data, nil, nil
	}
	root := doc.Content[0]
	paths := [][]string{serversPath("")}
	if projects := lookup(root, "projects"); projects != nil {
		for i := 0; i+1 < len(projects.Content); i += 2 {
			paths = append(paths, serversPath(projects.Content[i].Value))
		}
	}
	var added []string
	for _, path := range paths {
		theirs := lookup(root, path...)
		if theirs == nil {
			continue
		}
		for i := 0; i+1 < len(theirs.Content); i += 2 {
			key, entry := theirs.Content[i], theirs.Content[i+1]
			out, err := addAt(data, path, key, entry)
			if errors.Is(err, ErrExists) {
				continue
			}
			if err != nil {
				return nil, nil, err
			}
			data = out
			added = append(added, key.Value+where(path))
		}
	}
	return data, added, nil
}

// serversPath is the key path of the servers of every folder (dir empty) or of project dir.
func serversPath(dir string) []string {
	if dir == "" {
		return []string{"mcpServers"}
	}
	return []string{"projects", dir, "mcpServers"}
}

// lookup returns the mapping at path below m, or nil.
func lookup(m *yaml.Node, path ...string) *yaml.Node {
	for _, p := range path {
		i := keyIndex(m, p)
		if i < 0 || m.Content[i+1].Kind != yaml.MappingNode {
			return nil
		}
		m = m.Content[i+1]
	}
	return m
}

// addAt adds key: entry to the mapping at path in data, making the mappings on the way that
// the file lacks (see AddServer).
func addAt(data []byte, path []string, key, entry *yaml.Node) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the configuration does not parse; fix it first: %w", err)
	}
	if len(doc.Content) == 0 {
		text, err := nested(path, key, entry)
		if path[0] != "mcpServers" {
			// A configuration has mcpServers, if only empty.
			text = append([]byte("mcpServers: {}\n"), text...)
		}
		return text, err
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
			return nil, fmt.Errorf("%s is not a mapping of server names: fix the file first", strings.Join(path[:i+1], "."))
		}
		m = next
	}
	if keyIndex(m, key.Value) >= 0 {
		return nil, fmt.Errorf("server %q%s is %w", key.Value, where(path), ErrExists)
	}
	return insertInto(data, &doc, m, key, entry)
}

// where says whose servers path holds, for messages: "" or " of project DIR".
func where(path []string) string {
	if path[0] == "projects" {
		return " of project " + path[1]
	}
	return ""
}

// nested is path's mappings, around key: entry, as the text of a whole file.
func nested(path []string, key, entry *yaml.Node) ([]byte, error) {
	value := mapping(key, entry)
	for k := len(path) - 1; k >= 0; k-- {
		value = mapping(strNode(path[k]), value)
	}
	return encodeBlock(value, 0)
}

// insertInto adds key: value to the mapping m of doc: after m's last line, at its keys'
// indentation, when m is in block style and not empty; else by writing doc again, m in its
// own style.
func insertInto(data []byte, doc, m, key, value *yaml.Node) ([]byte, error) {
	if m.Style&yaml.FlowStyle == 0 && len(m.Content) > 0 {
		text, err := encodeBlock(mapping(key, value), m.Content[0].Column-1)
		if err != nil {
			return nil, err
		}
		return insertAfterLine(data, lastLine(m), text), nil
	}
	m.Content = append(m.Content, key, value)
	return encodeDoc(doc)
}

// RemoveServer returns the configuration text data without the server name, and the rest
// of the file as it was, the server's own comment lines aside.
func RemoveServer(data []byte, name string) ([]byte, error) {
	return removeAt(data, serversPath(""), name)
}

// RemoveProjectServer is RemoveServer for a server of the project dir.
func RemoveProjectServer(data []byte, dir, name string) ([]byte, error) {
	return removeAt(data, serversPath(dir), name)
}

// removeAt takes the server name out of the mapping at path in data.
func removeAt(data []byte, path []string, name string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the configuration does not parse; fix it first: %w", err)
	}
	var servers *yaml.Node
	if len(doc.Content) > 0 {
		servers = lookup(doc.Content[0], path...)
	}
	if servers == nil {
		return nil, fmt.Errorf("server %q is not in the configuration (it has no servers%s)", name, strings.Replace(where(path), " of ", " for ", 1))
	}
	i := keyIndex(servers, name)
	if i < 0 {
		return nil, fmt.Errorf("server %q is not in the configuration%s; it has: %s", name, strings.Replace(where(path), " of ", " for ", 1), strings.Join(ServerNames(servers), ", "))
	}
	if servers.Style&yaml.FlowStyle != 0 || len(servers.Content) == 2 {
		// Flow style (JSON), or the last server, which leaves an empty mapping ({}): the
		// document is written again whole.
		servers.Content = slices.Delete(servers.Content, i, i+2)
		servers.Style |= yaml.FlowStyle
		return encodeDoc(&doc)
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
