package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxPropertyLen is the longest property name Anthropic's API accepts, as it accepts only
// ^[a-zA-Z0-9_.-]{1,64}$.
const maxPropertyLen = 64

// repairSchema returns an input schema every client accepts, with what it changed, and
// args, which maps each renamed argument to the server's name for it (nil if none was):
//   - "type": "object" at the top, where the server left it out (MCP requires it, and the
//     TypeScript SDK's client and Claude Code refuse a server's whole tool list over one
//     schema without it; gitlab's lack it);
//   - top-level property names outside ^[a-zA-Z0-9_.-]{1,64}$ renamed (Anthropic's API
//     refuses them, so Claude Code leaves the tool out; twilio has StartTime< and
//     StartTime>): < becomes _lt, > becomes _gt, anything else _, and a name that would
//     collide gets a short hash.
//
// A schema that needs neither is returned byte for byte.
func repairSchema(s json.RawMessage) (out json.RawMessage, args map[string]string, repairs []string) {
	if plainSchema(s) {
		return s, nil, nil
	}
	return repairSchemaFully(s)
}

// repairSchemaFully is repairSchema without the shortcut for schemas that need nothing.
func repairSchemaFully(s json.RawMessage) (out json.RawMessage, args map[string]string, repairs []string) {
	out = objectSchema(s)
	if !bytes.Equal(out, s) {
		repairs = append(repairs, `added "type": "object"`)
	}
	top, err := objectFields(out)
	if err != nil {
		return out, nil, repairs
	}
	pi := top.index("properties")
	if pi < 0 {
		return out, nil, repairs
	}
	props, err := objectFields(top[pi].value)
	if err != nil {
		return out, nil, repairs
	}
	taken := map[string]bool{}
	for _, p := range props {
		taken[p.key] = true
	}
	for i, p := range props {
		if legalProperty(p.key) {
			continue
		}
		safe := safeProperty(p.key, taken)
		taken[safe] = true
		if args == nil {
			args = map[string]string{}
		}
		args[safe] = p.key
		props[i].key = safe
		repairs = append(repairs, fmt.Sprintf("renamed property %q to %q", p.key, safe))
	}
	if args == nil {
		return out, nil, repairs
	}
	top[pi].value = props.encode()
	if ri := top.index("required"); ri >= 0 {
		var required []string
		if json.Unmarshal(top[ri].value, &required) == nil {
			back := map[string]string{}
			for safe, orig := range args {
				back[orig] = safe
			}
			for i, name := range required {
				if safe, ok := back[name]; ok {
					required[i] = safe
				}
			}
			top[ri].value, _ = json.Marshal(required)
		}
	}
	return top.encode(), args, repairs
}

// legalProperty reports whether every client accepts name as a property name.
func legalProperty[T string | []byte](name T) bool {
	if len(name) == 0 || len(name) > maxPropertyLen {
		return false
	}
	// Byte by byte: a byte of a character outside ASCII is no more legal than the character.
	for i := range len(name) {
		if c := name[i]; !isLegal(rune(c)) && c != '.' {
			return false
		}
	}
	return true
}

// plainSchema reports whether repairSchema would return s as it is, in one pass that
// allocates nothing, which is what most schemas need: s is a JSON object with a "type"
// member whose "properties", if it has them, all have legal names. Whatever it is unsure of
// (a name with an escape in it, "properties" twice or not an object, s not JSON) it reports
// false, leaving repairSchema to decode s.
func plainSchema(s []byte) bool {
	i := skipSpace(s, 0)
	if i == len(s) || s[i] != '{' {
		return false
	}
	typed, props := false, false
	ok := eachMember(s, i, func(key, value []byte) bool {
		switch string(key) {
		case "type":
			typed = true
		case "properties":
			if props || value[0] != '{' {
				return false
			}
			props = true
			return eachMember(value, 0, func(name, _ []byte) bool { return legalProperty(name) })
		}
		return true
	})
	return ok && typed
}

// safeProperty makes a legal property name from name, unlike any in taken.
func safeProperty(name string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '<':
			b.WriteString("_lt")
		case r == '>':
			b.WriteString("_gt")
		case isLegal(r) || r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	safe := b.String()
	if safe != "" && len(safe) <= maxPropertyLen && !taken[safe] {
		return safe
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:4])
	if max := maxPropertyLen - len(suffix) - 1; len(safe) > max {
		safe = safe[:max]
	}
	return safe + "_" + suffix
}

// renameArgs gives the arguments of a call the names the server uses (see repairSchema).
// Arguments that need no renaming, or are not a JSON object, are sent as they came.
func renameArgs(raw json.RawMessage, names map[string]string) json.RawMessage {
	if len(names) == 0 {
		return raw
	}
	fields, err := objectFields(raw)
	if err != nil {
		return raw
	}
	changed := false
	for i, f := range fields {
		if orig, ok := names[f.key]; ok {
			fields[i].key, changed = orig, true
		}
	}
	if !changed {
		return raw
	}
	return fields.encode()
}

// field is one member of a JSON object, its value kept raw.
type field struct {
	key   string
	value json.RawMessage
}

// fields are a JSON object's members in their order.
type fields []field

// objectFields splits a JSON object into its members, in order.
func objectFields(raw json.RawMessage) (fields, error) {
	// Most objects' member names have no escapes and are UTF-8, and need no decoding.
	if i := skipSpace(raw, 0); validJSON(raw) && raw[i] == '{' {
		var out fields
		if eachMember(raw, i, func(key, value []byte) bool {
			out = append(out, field{key: string(key), value: value})
			return utf8.Valid(key)
		}) {
			return out, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out fields
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{key: tok.(string), value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}

func (fs fields) index(key string) int {
	for i, f := range fs {
		if f.key == key {
			return i
		}
	}
	return -1
}

func (fs fields) encode() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		// Keys as the server wrote them: not StartTime\u003c for StartTime<.
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(f.key)
		b.Truncate(b.Len() - 1) // Encode ends with a newline
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// objectSchema returns an input schema that says "type": "object", as MCP requires of one:
// Claude Code drops a server's whole tool list over a single schema without it (gitlab's
// lack it), which behind toolsift would take tool_search with it. A schema that says it, or
// says another type, or is not a JSON object, is kept byte for byte.
func objectSchema(s json.RawMessage) json.RawMessage {
	if !untypedObject(s) {
		return s
	}
	rest := bytes.TrimLeft(bytes.TrimSpace(s)[1:], " \t\r\n")
	if rest[0] == '}' {
		return json.RawMessage(`{"type":"object"}`)
	}
	return append(json.RawMessage(`{"type":"object",`), rest...)
}

// untypedObject reports whether s is a JSON object without a "type" member.
func untypedObject(s json.RawMessage) bool {
	i := skipSpace(s, 0)
	if !validJSON(s) || s[i] != '{' {
		return false // not JSON, null, an array, …
	}
	typed := false
	if eachMember(s, i, func(key, _ []byte) bool {
		typed = string(key) == "type"
		return !typed
	}) || typed {
		return !typed
	}
	// A name with an escape, which only decoding can tell from "type".
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(s, &fields)
	_, typed = fields["type"]
	return !typed
}
