package upstream

import (
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
	// Args maps the names of arguments that InputSchema renamed to the server's names for
	// them; nil when none was (see repairSchema).
	Args map[string]string
	// Repairs says what was changed in the server's input schema so that clients take it.
	Repairs []string
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
	schema, args, repairs := repairSchema(t.InputSchema)
	return Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: schema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Meta: t.Meta, Icons: t.Icons, Execution: t.Execution,
		AlwaysLoad: meta.AlwaysLoad, Args: args, Repairs: repairs,
	}, nil
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
