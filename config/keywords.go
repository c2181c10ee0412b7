package config

import (
	"errors"
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"
)

// AddKeywords returns the configuration text data with words added to the keywords of tool
// (its name on its server) of the server name, under mcpServers.NAME.tools, and every
// other byte as it was where the file allows: a tool with no entry, or an entry with no
// keywords, gets one written in after the lines before it; a keywords list gets the words
// it lacks appended, the file then written again from its nodes, comments kept.
func AddKeywords(data []byte, server, tool string, words []string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the configuration does not parse; fix it first: %w", err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the configuration is not a mapping with an mcpServers key: fix it first")
	}
	entry := lookup(doc.Content[0], "mcpServers", server)
	if entry == nil {
		return nil, fmt.Errorf("mcpServers.%s: no such server in the configuration (a project's server takes keywords by hand)", server)
	}
	seq := func(ws []string) *yaml.Node {
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, w := range ws {
			n.Content = append(n.Content, strNode(w))
		}
		return n
	}
	t := lookup(entry, "tools", tool)
	if t == nil {
		if i := keyIndex(entry, "tools"); i >= 0 && entry.Content[i+1].Kind == yaml.MappingNode && keyIndex(entry.Content[i+1], tool) >= 0 {
			return nil, fmt.Errorf("mcpServers.%s.tools.%s is not a mapping: fix the file first", server, tool)
		}
		return addAt(data, []string{"mcpServers", server, "tools"}, strNode(tool), mapping(strNode("keywords"), seq(words)))
	}
	i := keyIndex(t, "keywords")
	if i < 0 {
		return insertInto(data, &doc, t, strNode("keywords"), seq(words))
	}
	list := t.Content[i+1]
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("mcpServers.%s.tools.%s.keywords is not a list: fix the file first", server, tool)
	}
	var have []string
	for _, n := range list.Content {
		have = append(have, n.Value)
	}
	added := false
	for _, w := range words {
		if !slices.Contains(have, w) {
			list.Content = append(list.Content, strNode(w))
			have = append(have, w)
			added = true
		}
	}
	if !added {
		return data, nil
	}
	return encodeDoc(&doc)
}
