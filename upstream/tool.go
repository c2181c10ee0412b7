package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/internal/identity"
	"github.com/toolsift/toolsift/pin"
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
	// Access, if set, limits the tool to some callers of a shared service (the tool's or
	// the server's access in the configuration).
	Access *config.Access
	// Args maps the names of arguments that InputSchema renamed to the server's names for
	// them; nil when none was (see repairSchema).
	Args map[string]string
	// Repairs says what was changed in the server's input schema so that clients take it.
	Repairs []string
	// Fingerprint is the SHA-256 of the tool as the server sent it (pin.Seen).
	Fingerprint string
	// source is the tool as the server sent it; nil for a tool made otherwise.
	source json.RawMessage
}

// Digest identifies the tool's definition as the server sent it (pin.Digest). It parses the
// tool again: a pin asks for it only when the Fingerprint is not the one it knows.
func (t *Tool) Digest() string { return pin.Digest(t.Name, t.Definition()) }

// Definition is what the model would read of the tool as the server sent it (see package
// pin): its title, description (not the configuration's), schemas (before any repair) and
// annotations.
func (t *Tool) Definition() pin.Definition {
	if t.source == nil {
		return pin.Definition{Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema, Annotations: t.Annotations}
	}
	f, ok := splitTool(t.source)
	if !ok {
		f, _ = decodeTool(t.source)
	}
	return pin.Definition{Title: f.Title, Description: f.Description, InputSchema: f.InputSchema, OutputSchema: f.OutputSchema, Annotations: f.Annotations}
}

// Admits reports whether u may use the tool: what a caller may not use does not exist for
// them.
func (t *Tool) Admits(u identity.User) bool {
	return t.Access == nil || u.Admitted(t.Access.Users, t.Access.Groups, t.Access.Tokens)
}

// ParseTool decodes one tool of a tools/list result.
func ParseTool(raw json.RawMessage) (Tool, error) {
	if !validJSON(raw) {
		_, err := decodeTool(raw) // for its error
		return Tool{}, err
	}
	return parseValidTool(raw)
}

// parseValidTool is ParseTool for a tool known to be valid JSON, as listPages and the cache
// leave them, which it does not check again. The tool's raw members are slices of raw.
func parseValidTool(raw json.RawMessage) (Tool, error) {
	t, ok := splitTool(raw)
	if !ok {
		var err error
		if t, err = decodeTool(raw); err != nil {
			return Tool{}, err
		}
	}
	if t.Name == "" {
		return Tool{}, errors.New("tool without a name")
	}
	schema, args, repairs := repairSchema(t.InputSchema)
	return Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: schema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Meta: t.Meta, Icons: t.Icons, Execution: t.Execution,
		AlwaysLoad: alwaysLoaded(t.Meta), Args: args, Repairs: repairs,
		Fingerprint: fingerprint(raw), source: raw,
	}, nil
}

func fingerprint(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// toolFields are the members of a tool that ParseTool reads. It is an alias of a struct
// without a name, so that encoding/json's errors name its fields as they always have
// ("Go struct field .name of type string"): they are logged for each tool skipped.
type toolFields = struct {
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

// toolKeys are the JSON names of toolFields' fields, in their order.
var toolKeys = [...]string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons", "execution"}

// decodeTool decodes a tool's members with encoding/json, which is what splitTool is held to.
func decodeTool(raw json.RawMessage) (toolFields, error) {
	var t toolFields
	err := json.Unmarshal(raw, &t)
	return t, err
}

// splitTool returns what decodeTool makes of a valid tool, without copying its raw members:
// they are slices of raw. It reports false for a tool it cannot be sure of: one that is not
// an object, that names a member of toolFields twice or as only encoding/json would match it
// (in another case, with an escape), or whose name, title or description is neither a
// string nor null. Those are decodeTool's, and tools that are not valid JSON are nobody's.
func splitTool(raw json.RawMessage) (toolFields, bool) {
	var t toolFields
	if len(raw) == 0 || raw[0] != '{' {
		return t, false
	}
	ok := eachKnownMember(raw, 0, toolKeys[:], func(k int, value []byte) bool {
		var ok bool
		switch k {
		case 0:
			t.Name, ok = jsonString(value)
			return ok
		case 1:
			t.Title, ok = jsonString(value)
			return ok
		case 2:
			t.Description, ok = jsonString(value)
			return ok
		case 3:
			t.InputSchema = value
		case 4:
			t.OutputSchema = value
		case 5:
			t.Annotations = value
		case 6:
			t.Meta = value
		case 7:
			t.Icons = value
		case 8:
			t.Execution = value
		}
		return true
	})
	return t, ok
}

// alwaysLoaded reports whether a tool's raw _meta says "anthropic/alwaysLoad": true.
func alwaysLoaded(meta json.RawMessage) bool {
	if len(meta) == 0 {
		return false
	}
	if meta[0] == '{' && eachMember(meta, 0, func(key, _ []byte) bool {
		k, sure := matchKey(key, metaKeys[:])
		return sure && k < 0
	}) {
		return false // the key is not there; most tools' _meta is like this
	}
	var m struct {
		AlwaysLoad bool `json:"anthropic/alwaysLoad"`
	}
	_ = json.Unmarshal(meta, &m)
	return m.AlwaysLoad
}

// metaKeys are the members of a tool's _meta that ParseTool reads.
var metaKeys = [...]string{"anthropic/alwaysLoad"}

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
		t, err := parseValidTool(raw) // json.Unmarshal checked them
		if err != nil {
			return nil, fmt.Errorf("%s: tool %d: %w", file, i, err)
		}
		t.Server = server
		t.Exposed = ExposedName(server, t.Name)
		tools = append(tools, t)
	}
	return tools, nil
}
