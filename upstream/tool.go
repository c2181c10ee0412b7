package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tool is one upstream tool, kept as the server sent it.
type Tool struct {
	// Server is the configured server's name; Name is the tool's name there.
	Server string
	Name   string
	// Exposed is the name clients see (see ExposedName).
	Exposed     string
	Title       string
	Description string
	// InputSchema, OutputSchema, Annotations, Meta, Icons and Execution are the raw JSON of
	// the tool's fields of those names (inputSchema, outputSchema, annotations, _meta, icons,
	// execution); absent fields are nil.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  json.RawMessage
	Meta         json.RawMessage
	Icons        json.RawMessage
	Execution    json.RawMessage
	// Keywords are extra search terms from the configuration.
	Keywords []string
	// AlwaysLoad is set when the configuration or the tool's own
	// _meta["anthropic/alwaysLoad"] asks for it to be shown to every session.
	AlwaysLoad bool
}

// ParseTool decodes one tool of a tools/list result.
func ParseTool(raw json.RawMessage) (Tool, error) {
	var t struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Annotations  json.RawMessage `json:"annotations"`
		Meta         json.RawMessage `json:"_meta"`
		Icons        json.RawMessage `json:"icons"`
		Execution    json.RawMessage `json:"execution"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return Tool{}, err
	}
	if t.Name == "" {
		return Tool{}, errors.New("tool without a name")
	}
	var meta struct {
		AlwaysLoad bool `json:"anthropic/alwaysLoad"`
	}
	if len(t.Meta) > 0 {
		_ = json.Unmarshal(t.Meta, &meta)
	}
	return Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: objectSchema(t.InputSchema), OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Meta: t.Meta, Icons: t.Icons, Execution: t.Execution,
		AlwaysLoad: meta.AlwaysLoad,
	}, nil
}

// objectSchema returns an input schema that says "type": "object", as MCP requires of one:
// Claude Code drops a server's whole tool list over a single schema without it (gitlab's
// lack it), which behind toolsift would take tool_search with it. A schema that says it, or
// says another type, or is not a JSON object, is kept byte for byte.
func objectSchema(s json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(s, &fields) != nil || fields == nil {
		return s
	}
	if _, ok := fields["type"]; ok {
		return s
	}
	rest := bytes.TrimLeft(bytes.TrimSpace(s)[1:], " \t\r\n")
	if rest[0] == '}' {
		return json.RawMessage(`{"type":"object"}`)
	}
	return append(json.RawMessage(`{"type":"object",`), rest...)
}

// LoadTools reads a tools/list result ({"tools": [...]}) from a file, as the tools of a server
// named after the file's base name without its extension.
func LoadTools(file string) ([]Tool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: want a tools/list result {\"tools\": [...]}: %w", file, err)
	}
	server := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	tools := make([]Tool, 0, len(list.Tools))
	for i, raw := range list.Tools {
		t, err := ParseTool(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: tool %d: %w", file, i, err)
		}
		t.Server = server
		t.Exposed = ExposedName(server, t.Name)
		tools = append(tools, t)
	}
	return tools, nil
}
