package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Entry is a server as toolsift writes it into a configuration file (add, import): a stdio
// server (Command, Args, Env, Cwd) or a remote one (Type, URL, Headers), and the settings
// import carries over. Zero fields are not written.
type Entry struct {
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	Type    string // http or sse, for a URL; empty writes none (a URL is http by default)
	URL     string
	Headers map[string]string

	Description                 string
	Allow, Deny                 []string
	StartupTimeout, CallTimeout time.Duration
	Disabled                    bool
}

// entryNode is e as a YAML mapping, the one way toolsift writes a server: keys in the order
// of config.example.yaml, lists on one line while they are short, maps a pair a line, and
// every value that YAML could read as something else quoted.
func entryNode(e Entry) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	add := func(k string, v *yaml.Node) { m.Content = append(m.Content, strNode(k), v) }
	if e.Type != "" {
		add("type", strNode(e.Type))
	}
	if e.Command != "" {
		add("command", strNode(e.Command))
	}
	if len(e.Args) > 0 {
		add("args", listNode("args", e.Args))
	}
	if len(e.Env) > 0 {
		add("env", mapNode(e.Env))
	}
	if e.Cwd != "" {
		add("cwd", strNode(e.Cwd))
	}
	if e.URL != "" {
		add("url", quotedNode(e.URL))
	}
	if len(e.Headers) > 0 {
		add("headers", mapNode(e.Headers))
	}
	if e.Description != "" {
		add("description", quotedNode(e.Description))
	}
	if len(e.Allow) > 0 {
		add("allow", listNode("allow", e.Allow))
	}
	if len(e.Deny) > 0 {
		add("deny", listNode("deny", e.Deny))
	}
	if e.StartupTimeout > 0 {
		add("startupTimeout", &yaml.Node{Kind: yaml.ScalarNode, Value: duration(e.StartupTimeout)})
	}
	if e.CallTimeout > 0 {
		add("callTimeout", &yaml.Node{Kind: yaml.ScalarNode, Value: duration(e.CallTimeout)})
	}
	if e.Disabled {
		add("disabled", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	return m
}

// listNode is a list of quoted strings: on one line, or a line each where one line would be
// too long to read.
func listNode(key string, items []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	width := len(key) + 6
	for _, it := range items {
		n.Content = append(n.Content, quotedNode(it))
		width += len(it) + 4
	}
	if width > 100 {
		n.Style = 0
	}
	return n
}

// mapNode is a map of strings, sorted, its values quoted.
func mapNode(kv map[string]string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		n.Content = append(n.Content, strNode(k), quotedNode(kv[k]))
	}
	return n
}

// plain matches strings YAML reads back as the same string without quotes.
var plain = regexp.MustCompile(`^[A-Za-z_/.][A-Za-z0-9_./+-]*$`)

// strNode is s as a string: plain where that reads back the same, else double-quoted.
func strNode(s string) *yaml.Node {
	n := quotedNode(s)
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", ".nan":
	default:
		if plain.MatchString(s) {
			n.Style = 0
		}
	}
	return n
}

func quotedNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Style: yaml.DoubleQuotedStyle}
}

func duration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// Named is a server to write into a new configuration file, with the comment lines above it.
type Named struct {
	Name    string
	Entry   Entry
	Comment []string
}

// Project is a folder's servers, for a new configuration file.
type Project struct {
	Dir     string
	Servers []Named
}

// NewFile is the text of a new configuration file: the comment lines head, the servers of
// every folder, then the projects', each server under its comment, a blank line between
// servers.
func NewFile(head []string, servers []Named, projects []Project) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	root.Content = append(root.Content, strNode("mcpServers"), serversNode(servers))
	if len(projects) > 0 {
		key := strNode("projects")
		key.HeadComment = "\nServed only when a client starts toolsift in that folder."
		dirs := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, p := range projects {
			dirs.Content = append(dirs.Content, strNode(p.Dir), mapping(strNode("mcpServers"), serversNode(p.Servers)))
		}
		root.Content = append(root.Content, key, dirs)
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: strings.Join(head, "\n"), Content: []*yaml.Node{root}}
	text, err := encodeDoc(doc)
	if err != nil {
		return nil, err
	}
	// yaml.v3 indents the blank line it writes before a nested key's comment.
	var out bytes.Buffer
	for line := range strings.Lines(string(text)) {
		if strings.TrimSpace(line) == "" {
			line = "\n"
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}

func serversNode(servers []Named) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if len(servers) == 0 {
		m.Style = yaml.FlowStyle
	}
	for i, s := range servers {
		key := strNode(s.Name)
		key.HeadComment = strings.Join(s.Comment, "\n")
		if i > 0 {
			key.HeadComment = "\n" + key.HeadComment
		}
		m.Content = append(m.Content, key, entryNode(s.Entry))
	}
	return m
}

// Scalar is s as toolsift writes a string in YAML: plain where that reads back the same,
// else double-quoted (a JSON string is a YAML double-quoted one).
func Scalar(s string) string {
	if strNode(s).Style == 0 {
		return s
	}
	q, _ := json.Marshal(s)
	return string(q)
}
