package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The tests in this file hold listPages, ParseTool and parseValidTool to what toolsift did
// before they scanned pages, tools and schemas themselves: decode each with encoding/json.
// oldListPages, oldParseTool and oldRepairSchema are that code, as it was.

func oldListPages(ctx context.Context, c Conn, method, field string) ([]json.RawMessage, error) {
	// Of the same name as it was, for encoding/json's errors.
	type listPage struct {
		Tools             []json.RawMessage `json:"tools"`
		Prompts           []json.RawMessage `json:"prompts"`
		Resources         []json.RawMessage `json:"resources"`
		ResourceTemplates []json.RawMessage `json:"resourceTemplates"`
		NextCursor        json.RawMessage   `json:"nextCursor"`
	}
	var items []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := c.Request(ctx, method, params)
		if err != nil {
			return nil, err
		}
		var page listPage
		if err := json.Unmarshal(raw, &page); err != nil {
			var typeErr *json.UnmarshalTypeError
			switch {
			case !errors.As(err, &typeErr) || typeErr.Field == "":
				return nil, fmt.Errorf("%s: decoding result: %w", method, err)
			case typeErr.Field == field:
				return nil, fmt.Errorf("%s: decoding %s: %w", method, field, err)
			}
		}
		items = append(items, map[string][]json.RawMessage{
			"tools": page.Tools, "prompts": page.Prompts, "resources": page.Resources, "resourceTemplates": page.ResourceTemplates,
		}[field]...)
		var next string
		if len(page.NextCursor) > 0 {
			_ = json.Unmarshal(page.NextCursor, &next)
		}
		if next == "" {
			return items, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("%s: cursor %q repeats", method, next)
		}
		seen[next] = true
		cursor = next
	}
}

func oldParseTool(raw json.RawMessage) (Tool, error) {
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
	schema, args, repairs := oldRepairSchema(t.InputSchema)
	return Tool{
		Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: schema, OutputSchema: t.OutputSchema, Annotations: t.Annotations,
		Meta: t.Meta, Icons: t.Icons, Execution: t.Execution,
		AlwaysLoad: meta.AlwaysLoad, Args: args, Repairs: repairs,
		Fingerprint: fingerprint(raw), source: raw,
	}, nil
}

// oldRepairSchema is repairSchema as it was, without its shortcut for schemas that need
// nothing (which it returns as they are): what the shortcut and the scans since are held to.
func oldRepairSchema(s json.RawMessage) (out json.RawMessage, args map[string]string, repairs []string) {
	out = oldObjectSchema(s)
	if !bytes.Equal(out, s) {
		repairs = append(repairs, `added "type": "object"`)
	}
	top, err := oldObjectFields(out)
	if err != nil {
		return out, nil, repairs
	}
	pi := top.index("properties")
	if pi < 0 {
		return out, nil, repairs
	}
	props, err := oldObjectFields(top[pi].value)
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

func oldObjectFields(raw json.RawMessage) (fields, error) {
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

func oldObjectSchema(s json.RawMessage) json.RawMessage {
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

// pageConn answers any list request from pages, by cursor.
type pageConn map[string]string

func (c pageConn) Request(_ context.Context, _ string, params any) (json.RawMessage, error) {
	cursor := ""
	if p, ok := params.(map[string]string); ok {
		cursor = p["cursor"]
	}
	page, ok := c[cursor]
	if !ok {
		return nil, &RPCError{Code: -32602, Message: "bad cursor"}
	}
	// A copy each time, so that nothing the old code or the new keeps is shared.
	return json.RawMessage(strings.Clone(page)), nil
}
func (pageConn) Close() error          { return nil }
func (pageConn) Lost() <-chan struct{} { return nil }
func (pageConn) Err() error            { return nil }

// listed is what a server makes of a tools/list: the raw tools it caches and, for each, the
// tool it parsed or why it skipped it.
type listed struct {
	raws  []json.RawMessage
	tools []Tool
	errs  []string // "" for a tool parsed
	err   string
}

func listWith(pages pageConn, field string, list func(context.Context, Conn, string, string) ([]json.RawMessage, error), parse func(json.RawMessage) (Tool, error)) listed {
	var l listed
	raws, err := list(context.Background(), pages, "tools/list", field)
	if err != nil {
		l.err = err.Error()
	}
	l.raws = raws
	for _, raw := range raws {
		t, err := parse(raw)
		l.tools = append(l.tools, t)
		l.errs = append(l.errs, errString(err))
	}
	return l
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// sameAsBefore fails t unless listing pages gives the raw items, tools and errors it did.
func sameAsBefore(t *testing.T, pages pageConn) {
	t.Helper()
	for _, field := range []string{"tools", "prompts"} {
		old := listWith(pages, field, oldListPages, oldParseTool)
		got := listWith(pages, field, listPages, parseValidTool)
		if got.err != old.err {
			t.Errorf("listPages(%.200q, %s) error = %q, want %q", pages[""], field, got.err, old.err)
		}
		if len(got.raws) != len(old.raws) {
			t.Errorf("listPages(%.200q, %s) = %d items, want %d", pages[""], field, len(got.raws), len(old.raws))
			continue
		}
		for i := range old.raws {
			if string(got.raws[i]) != string(old.raws[i]) {
				t.Errorf("listPages(%.200q, %s)[%d] = %.200s, want %.200s", pages[""], field, i, got.raws[i], old.raws[i])
			}
			if got.errs[i] != old.errs[i] || !reflect.DeepEqual(got.tools[i], old.tools[i]) {
				t.Errorf("parseValidTool(%.200s) = %+.300v, %q; want %+.300v, %q", old.raws[i], got.tools[i], got.errs[i], old.tools[i], old.errs[i])
			}
		}
		// The cache keeps the raw tools as json.Marshal writes them.
		gotCache, _ := json.Marshal(got.raws)
		oldCache, _ := json.Marshal(old.raws)
		if string(gotCache) != string(oldCache) {
			t.Errorf("listPages(%.200q, %s) caches %.200s, want %.200s", pages[""], field, gotCache, oldCache)
		}
	}
}

// hostileTools are tools as a server might send them, each a member of a page's list.
var hostileTools = []string{
	`{"name":"a"}`,
	`{"name":"a","title":"A","description":"does a","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":1},"icons":[{"src":"x"}],"execution":{"taskSupport":"optional"}}`,
	` { "name" : "spaced" ,	"inputSchema" : { "type" : "object" } , "description"
	: "x" } `,
	`null`, `1`, `"a"`, `true`, `[]`, `[{"name":"a"}]`, `{}`,
	// Missing or wrong-typed name, title, description.
	`{"title":"no name"}`, `{"name":""}`, `{"name":null}`, `{"name":5}`, `{"name":{"a":1}}`, `{"name":["a"]}`, `{"name":true}`,
	`{"name":"a","title":false}`, `{"name":"a","description":["x"]}`, `{"name":"a","description":null}`, `{"name":"a","title":7,"description":"d"}`,
	// Raw members of any type.
	`{"name":"a","inputSchema":null}`, `{"name":"a","inputSchema":"x"}`, `{"name":"a","inputSchema":[]}`, `{"name":"a","inputSchema":-1.5e+10}`,
	`{"name":"a","icons":true,"execution":0,"annotations":"x","outputSchema":null}`,
	`{"name":"a","inputSchema":{}}`, `{"name":"a","inputSchema":{"properties":{"x":{}}}}`,
	// Duplicate members: the last wins, but for a null name, title or description.
	`{"name":"a","name":"b"}`, `{"name":"a","name":null}`, `{"name":"a","name":5}`, `{"name":5,"name":"a"}`, `{"name":"a","name":""}`,
	`{"name":"a","inputSchema":{"type":"object"},"inputSchema":{"properties":{"x<":{}}}}`, `{"name":"a","inputSchema":{"type":"object"},"inputSchema":null}`,
	`{"name":"a","_meta":{"anthropic/alwaysLoad":true},"_meta":{}}`, `{"name":"a","_meta":{},"_meta":{"anthropic/alwaysLoad":true}}`,
	// Members as encoding/json matches them: in any case, with escapes, folded.
	`{"Name":"a"}`, `{"NAME":"a","name":"b"}`, `{"name":"b","NAME":"a"}`, `{"name":"a","InputSchema":{"properties":{"x<":{}}}}`,
	`{"name":"a","inputschema":{"type":"object"},"inputSchema":{"properties":{}}}`, `{"name":"a","_META":{"anthropic/alwaysLoad":true}}`,
	`{"n\u0061me":"a"}`, `{"name":"a","n\u0061me":"b"}`, `{"name":"a","\u0074itle":"T"}`,
	"{\"name\":\"a\",\"input\u017fchema\":{\"properties\":{\"x<\":{}}}}", // ſ folds to s
	"{\"name\":\"a\",\"\u212a\":1,\"x\u212ay\":2,\"日本\":3}",              // K folds to k
	// Unknown members, some of them lists and cursors of their own.
	`{"name":"a","tools":[{"name":"b"}],"nextCursor":"p2","x":{"name":"c"}}`,
	// Strings with escapes and characters outside ASCII.
	`{"name":"caf\u00e9","title":"日本語","description":"\ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"}`,
	`{"name":"\ud800","description":"lone \udc00 surrogates \ud800x"}`,
	"{\"name\":\"bad \xff\xfe utf-8\",\"description\":\"\xc3\"}",
	"{\"name\":\"surrogate in utf-8 \xed\xa0\x80\"}",
	`{"name":"\ud83d","title":"\ud83dx","description":"\ud83d\u0041 \udc00\ud800 \ud800\ud800\udc00 \uD83D\uDE00 \uFFFD \u0041"}`,
	`{"name":"\n","title":"\\","description":"a\\\"b\\\\"}`, `{"name":"a\\\\","x":"\\\"\\","y":["\\"]}`, `{"name":"\"}{\"","inputSchema":{"\\":"\"}"}}`,
	`{"name":"\u0000nul"}`, `{"name":"a\u2028b"}`, `{"name":"<&>","description":"<script>"}`,
	// _meta's alwaysLoad, as encoding/json reads it.
	`{"name":"a","_meta":{"anthropic/alwaysLoad":true}}`, `{"name":"a","_meta":{"anthropic/alwaysLoad":false}}`,
	`{"name":"a","_meta":{"anthropic/alwaysLoad":"yes"}}`, `{"name":"a","_meta":{"anthropic/alwaysLoad":null}}`,
	`{"name":"a","_meta":{"Anthropic/AlwaysLoad":true}}`, `{"name":"a","_meta":{"anthropic\/alwaysLoad":true}}`,
	"{\"name\":\"a\",\"_meta\":{\"anthropic/alway\u017fLoad\":true}}",
	`{"name":"a","_meta":{"anthropic/alwaysLoad":true,"anthropic/alwaysLoad":null}}`,
	`{"name":"a","_meta":{"anthropic/alwaysLoad":true,"anthropic/alwaysLoad":"x"}}`,
	`{"name":"a","_meta":{"anthropic/alwaysLoad":true,"anthropic/alwaysLoad":false}}`,
	`{"name":"a","_meta":{"x":{"anthropic/alwaysLoad":true}}}`, `{"name":"a","_meta":{"anthropic/alwaysLoad":1}}`,
	`{"name":"a","_meta":[]}`, `{"name":"a","_meta":null}`, `{"name":"a","_meta":"x"}`, `{"name":"a","_meta":{}}`,
	// Schemas to repair.
	`{"name":"a","inputSchema":{"properties":{"StartTime<":{},"StartTime>":{}},"required":["StartTime<"]}}`,
	`{"name":"a","inputSchema":{"type":"object","properties":{"a b":{},"a_b":{}}}}`,
	`{"name":"a","inputSchema":{"type":"object","properties":{"caf\u00e9":{}}}}`,
	`{"name":"a","inputSchema":{"type":"object","properties":{"x":1},"properties":{"y<":2}}}`,
	"{\"name\":\"a\",\"inputSchema\": { \"properties\" : { \"x<\" : { \"type\" : \"string\" } ,\n\"y\" : 1 } , \"required\" : [ \"x<\" , \"y\" ] } }",
	`{"name":"a","inputSchema":{"\u0074ype":"object","properties":{"x<":{}}}}`, `{"name":"a","inputSchema":{"typ\u0065":1,"properties":{"x":{}}}}`,
	`{"name":"a","inputSchema":{"properties":{"x<":{},"caf\u00e9":{}},"required":["x<","caf\u00e9"]}}`,
	`{"name":"a","inputSchema":{"pr\u006fperties":{"x<":{}}}}`, `{"name":"a","inputSchema":{"properties":{"x<":{}},"properties":{"y>":{}}}}`,
	"{\"name\":\"a\",\"inputSchema\":{\"properties\":{\"x\xff<\":{}}}}", "{\"name\":\"a\",\"inputSchema\":{\"ty\xffpe\":1}}",
	`{"name":"a","inputSchema":{"properties":{"a<":{},"a_lt":{}},"required":"a<"}}`, `{"name":"a","inputSchema":{"properties":[]}}`, `{"name":"a","inputSchema":{"Type":"object"}}`,
	// Huge schemas, descriptions and nesting.
	`{"name":"wide","inputSchema":{"type":"object","properties":{` + wideProperties(5000) + `}}}`,
	`{"name":"deep","inputSchema":` + strings.Repeat(`{"type":"object","properties":{"x":`, 400) + `{}` + strings.Repeat(`}}`, 400) + `}`,
	`{"name":"long","description":"` + strings.Repeat("abc \\n é ", 100000) + `"}`,
	`{"name":"arrays","inputSchema":{"type":"object","enum":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`,
	// Not JSON: only ParseTool sees these.
	``, ` `, `{`, `{"name":"a"`, `{"name":"a",}`, `{"name":'a'}`, `{"name":"a"} x`, `{"name":"a","x":tru}`, `{"name":"a\x01"}`, `{"name":"\u12"}`,
}

// wideProperties returns n members of a schema's properties, some with names to repair.
func wideProperties(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i%100 == 7 {
			fmt.Fprintf(&b, `"p%d<":{"type":"string","description":"property %d"}`, i, i)
		} else {
			fmt.Fprintf(&b, `"p%d":{"type":"string","description":"property %d"}`, i, i)
		}
	}
	return b.String()
}

// hostilePages are tools/list results, by cursor.
var hostilePages = []pageConn{
	{"": `{"tools":[{"name":"a"},{"name":"b"}]}`},
	{"": " \n{ \"tools\" : [ {\"name\" : \"a\" } ,\n{\"name\":\"b\"} ] , \"nextCursor\" : null } \n"},
	{"": `{"tools":[null,{"name":"a"},null,1,"x",true,[],{}]}`},
	{"": `{"tools":[{"name":5},{"name":"ok"},{"title":"no name"},{"name":"ok2","description":1}]}`},
	{"": `{"tools":[]}`}, {"": `{"tools":null}`}, {"": `{}`}, {"": `null`}, {"": ` null `},
	{"": `{"tools":"a"}`}, {"": `{"tools":{"name":"a"}}`}, {"": `{"tools":5}`}, {"": `{"tools":true}`},
	{"": `[{"name":"a"}]`}, {"": `"tools"`}, {"": `5`},
	{"": `{"tools":[{"name":"a"}]`}, {"": `{"tools":[{"name":"a",}]}`}, {"": `{"tools":[]} x`}, {"": `{"tools":[tru]}`}, {"": ``}, {"": ` `},
	// Other lists, as the page's other members, are no concern of this one.
	{"": `{"tools":[{"name":"a"}],"resources":3,"prompts":{"x":1}}`},
	{"": `{"prompts":3,"tools":"a"}`}, {"": `{"tools":"a","prompts":3}`}, {"": `{"prompts":[{"name":"p"}],"tools":[{"name":"a"}]}`},
	{"": `{"resourceTemplates":"x","resources":[1],"tools":[{"name":"a"}],"other":{"tools":[{"name":"b"}]}}`},
	// Nested pages: only the top level's lists count.
	{"": `{"result":{"tools":[{"name":"a"}],"nextCursor":"p2"}}`, "p2": `{"tools":[{"name":"b"}]}`},
	{"": `{"tools":[{"name":"a","inputSchema":{"tools":[{"name":"b"}],"nextCursor":"p2"}},{"tools":[{"name":"c"}]}]}`, "p2": `{"tools":[{"name":"x"}]}`},
	// Lists named twice, or as encoding/json matches them.
	{"": `{"Tools":[{"name":"a"}]}`}, {"": `{"TOOLS":[{"name":"a"}],"tools":[{"name":"b"}]}`}, {"": `{"tools":[{"name":"b"}],"TOOLS":[{"name":"a"}]}`},
	{"": `{"tools":[{"name":"a"}],"tools":[{"name":"b"},{"name":"c"}]}`}, {"": `{"tools":[{"name":"a"},{"name":"b"}],"tools":[{"name":"c"}]}`},
	{"": `{"tools":[{"name":"a"}],"tools":null}`}, {"": `{"tools":[{"name":"a"}],"tools":"x"}`},
	{"": `{"t\u006fols":[{"name":"a"}]}`}, {"": "{\"tool\u017f\":[{\"name\":\"a\"}]}"},
	{"": `{"prompts":[{"name":"p"}],"Prompts":[{"name":"q"}],"tools":[]}`},
	// Cursors.
	{"": `{"tools":[{"name":"a"}],"nextCursor":"p2"}`, "p2": `{"tools":[{"name":"b"}],"nextCursor":"p3"}`, "p3": `{"tools":[{"name":"c"}]}`},
	{"": `{"tools":[{"name":"a"}],"nextCursor":"p2"}`, "p2": `{"tools":[],"nextCursor":"p2"}`},
	{"": `{"tools":[{"name":"a"}],"nextCursor":"gone"}`},
	{"": `{"tools":[{"name":"a"}],"nextCursor":"p\u0032"}`, "p2": `{"tools":[{"name":"b"}]}`},
	{"": `{"tools":[{"name":"a"}],"nextCursor":5}`}, {"": `{"tools":[{"name":"a"}],"nextCursor":""}`}, {"": `{"tools":[{"name":"a"}],"nextCursor":{"c":"p2"}}`},
	{"": `{"tools":[{"name":"a"}],"nextCursor":"p2","nextCursor":""}`, "p2": `{"tools":[{"name":"b"}]}`},
	{"": `{"tools":[{"name":"a"}],"NextCursor":"p2"}`, "p2": `{"tools":[{"name":"b"}]}`},
	{"": `{"nextCursor":"p2","tools":[{"name":"a"}]}`, "p2": `{"tools":"x"}`},
	{"": `{"tools":[{"name":"a"}],"nextCursor":"p2"}`, "p2": `{"tools":[{"name":"a"}],"tools":[{"name":"b"}]}`},
}

// TestDecodeAsBefore: scanning pages and tools gives the raw tools (and so the cache), the
// tools, the skipped tools and the errors that encoding/json did.
func TestDecodeAsBefore(t *testing.T) {
	for _, pages := range hostilePages {
		sameAsBefore(t, pages)
	}
	for _, raw := range hostileTools {
		got, gotErr := ParseTool(json.RawMessage(raw))
		want, wantErr := oldParseTool(json.RawMessage(raw))
		if errString(gotErr) != errString(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseTool(%.200q) = %+.300v, %v; want %+.300v, %v", raw, got, gotErr, want, wantErr)
		}
		if !json.Valid([]byte(raw)) {
			continue
		}
		// Among siblings, which it must not take down with it.
		sameAsBefore(t, pageConn{"": `{"tools":[{"name":"before"},` + raw + `,{"name":"after"}]}`})
	}
}

// TestDecodeCatalogsAsBefore: the public catalogs decode as they did.
func TestDecodeCatalogsAsBefore(t *testing.T) {
	files, _ := filepath.Glob("../bench/catalogs/*.json")
	if len(files) == 0 {
		t.Skip("no catalogs in ../bench/catalogs")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sameAsBefore(t, pageConn{"": string(data)})
	}
}

// TestSchemaScansAsBefore: objectFields, which also renames a call's arguments, and
// objectSchema scan objects as they decoded them, valid JSON or not.
func TestSchemaScansAsBefore(t *testing.T) {
	for _, s := range append(append(hostileTools, validJSONCases...),
		`{"a<":1,"b":[1,2],"c":{"d":"e"}}`, ` { "a" : 1 , "b\u003c" : 2 } `, `{"a":1,}`, `{"a":1}x`, `{"a" 1}`, `{"a":1,"a":2}`, "{\"\xff\":1}", `{"type":1}`, `{"\u0074ype":1}`, `{"x":{"type":1}}`,
	) {
		schemaScansAsBefore(t, s)
	}
}

func schemaScansAsBefore(t *testing.T, s string) {
	t.Helper()
	got, gotErr := objectFields(json.RawMessage(s))
	want, wantErr := oldObjectFields(json.RawMessage(s))
	if errString(gotErr) != errString(wantErr) || len(got) != len(want) {
		t.Errorf("objectFields(%.200q) = %d fields, %v; want %d, %v", s, len(got), gotErr, len(want), wantErr)
	} else {
		for i := range want {
			if got[i].key != want[i].key || string(got[i].value) != string(want[i].value) {
				t.Errorf("objectFields(%.200q)[%d] = %q: %.100s; want %q: %.100s", s, i, got[i].key, got[i].value, want[i].key, want[i].value)
			}
		}
	}
	if got, want := objectSchema(json.RawMessage(s)), oldObjectSchema(json.RawMessage(s)); string(got) != string(want) {
		t.Errorf("objectSchema(%.200q) = %.200s, want %.200s", s, got, want)
	}
}

// FuzzDecodeAsBefore: any page decodes as it did.
func FuzzDecodeAsBefore(f *testing.F) {
	for _, pages := range hostilePages {
		f.Add(pages[""])
	}
	for _, raw := range hostileTools {
		if len(raw) < 1000 {
			f.Add(`{"tools":[` + raw + `,{"name":"b"}]}`)
		}
	}
	f.Fuzz(func(t *testing.T, page string) {
		sameAsBefore(t, pageConn{"": page})
		got, gotErr := ParseTool(json.RawMessage(page))
		want, wantErr := oldParseTool(json.RawMessage(page))
		if errString(gotErr) != errString(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseTool(%q) = %+v, %v; want %+v, %v", page, got, gotErr, want, wantErr)
		}
		schemaScansAsBefore(t, page)
	})
}
