package search

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ParamsFromSchema reads the parameters of a JSON Schema object: each property's name and
// description, with the values of an enum appended, since words like "closed" or "merged"
// are often the only place a tool mentions what it can do. Nested objects are not walked.
func ParamsFromSchema(schema json.RawMessage) []Param {
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
			Items       struct {
				Enum []any `json:"enum"`
			} `json:"items"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	params := make([]Param, 0, len(s.Properties))
	for name, p := range s.Properties {
		desc := p.Description
		if enum := append(p.Enum, p.Items.Enum...); len(enum) > 0 {
			vals := make([]string, 0, len(enum))
			for _, v := range enum {
				vals = append(vals, fmt.Sprint(v))
			}
			desc += " (" + strings.Join(vals, ", ") + ")"
		}
		params = append(params, Param{Name: name, Description: desc})
	}
	slices.SortFunc(params, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	return params
}
