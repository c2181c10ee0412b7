package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsift/toolsift/config"
	"github.com/toolsift/toolsift/upstream"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// The golden transcripts pin what the model reads: tool lists, the tool_search description,
// results and error messages. A change to any of them shows up in review as a diff under
// testdata/. Rewrite them with
//
//	go test ./proxy -run TestGolden -update
//
// and read the diff before committing it: the tool_search description is part of every
// prompt, so changing it invalidates every client's prompt cache.

// TestGoldenSearch records a session over stdio: tools/list before a search, the search with
// its re-list handshake (list_changed, then the client's tools/list answered before the
// search result), and the search result.
func TestGoldenSearch(t *testing.T) {
	c := newTranscript(t, newGoldenProxy(t))
	c.initialize()
	c.roundTrip("tools/list", map[string]any{})
	id := c.send("tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": "create issue", "max_results": 2}})
	c.expect("notifications/tools/list_changed")
	c.roundTrip("tools/list", map[string]any{})
	c.expect(id)
	c.check("search.txtar")
}

// TestGoldenSearchCodex records a search by Codex, which does not re-list before it reads
// the result: the result follows list_changed at once, and tells the model to use call_tool.
func TestGoldenSearchCodex(t *testing.T) {
	c := newTranscript(t, newGoldenProxy(t))
	c.initializeAs("codex-mcp-client")
	id := c.send("tools/call", map[string]any{"name": SearchTool, "arguments": map[string]any{"query": "send message", "max_results": 1}})
	// Nothing waits for the notification to go out before the result: either may come first.
	c.expectUnordered("notifications/tools/list_changed", id)
	c.check("search_codex.txtar")
}

// TestGoldenCallToolErrors records the errors call_tool reports for names and arguments it
// cannot serve.
func TestGoldenCallToolErrors(t *testing.T) {
	c := newTranscript(t, newGoldenProxy(t))
	c.initialize()
	for _, args := range []map[string]any{
		{"name": "gh__no_such_tool", "arguments": map[string]any{}},
		{"name": "gh__delete_repo", "arguments": map[string]any{"repo": "toolsift"}},
		{"name": "gh__create_issue", "arguments": "title=bug"},
		{"arguments": map[string]any{"title": "bug"}},
		{"name": 7},
	} {
		c.roundTrip("tools/call", map[string]any{"name": CallTool, "arguments": args})
	}
	// A direct call of a hidden tool that does not exist goes through call_tool too.
	c.roundTrip("tools/call", map[string]any{"name": "chat__no_such_tool", "arguments": map[string]any{}})
	c.check("call_tool_errors.txtar")
}

// TestGoldenSearchDescription records tool_search's definition for servers in every state:
// the directory of servers in its description is what the model knows it can search for.
func TestGoldenSearchDescription(t *testing.T) {
	def := searchToolDef([]upstream.Status{
		{Name: "github", State: upstream.StateConnected, Tools: 41, Summary: "GitHub: issues, pull requests, code search.\nSecond line is not shown."},
		{Name: "slack", State: upstream.StateIdle, Tools: 12},
		{Name: "jira", State: upstream.StateStarting, Tools: 30, Summary: "Jira Cloud"},
		{Name: "crashed", State: upstream.StateFailed, Tools: 5},
		{Name: "new", State: upstream.StateStarting},
		{Name: "broken", State: upstream.StateFailed},
		{Name: "off", State: upstream.StateDisabled, Tools: 9},
	}, "")
	raw, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	c := &transcript{t: t}
	c.add("description", []byte(def.Description+"\n"))
	c.add("tool", pretty(t, raw))
	c.check("tool_search_description.txtar")
}

// newGoldenProxy serves a proxy over two fake servers with fixed tools, one of them denied.
func newGoldenProxy(t *testing.T) *Server {
	t.Helper()
	// ListWait is long, so that the second list_changed, sent halfway, never shows up in a
	// transcript: the client here re-lists at once.
	return newGoldenProxyWith(t, Options{Version: "golden", ListWait: 20 * time.Second})
}

// newGoldenProxyWith is newGoldenProxy with other options.
func newGoldenProxyWith(t *testing.T, opts Options) *Server {
	t.Helper()
	servers := []config.Server{
		{Name: "gh", Prefix: "gh", Type: config.TypeStdio, Command: "x", AlwaysLoad: []string{"get_me"}, Deny: []string{"delete_*"}},
		{Name: "chat", Prefix: "chat", Type: config.TypeStdio, Command: "y"},
	}
	conns := map[string]*fakeConn{
		"gh": {tools: []json.RawMessage{
			json.RawMessage(`{"name":"get_me","description":"Get the authenticated GitHub user.","inputSchema":{"type":"object","properties":{}}}`),
			json.RawMessage(`{"name":"create_issue","description":"Create an issue in a GitHub repository.\n\nThe body is Markdown.","inputSchema":{"type":"object","properties":{"repo":{"type":"string","description":"owner/name"},"title":{"type":"string"},"body":{"type":"string"}},"required":["repo","title"]},"annotations":{"destructiveHint":false}}`),
			json.RawMessage(`{"name":"list_issues","description":"List issues of a GitHub repository.","inputSchema":{"type":"object","properties":{"repo":{"type":"string"},"state":{"enum":["open","closed","all"]}},"required":["repo"]}}`),
			json.RawMessage(`{"name":"delete_repo","description":"Delete a GitHub repository.","inputSchema":{"type":"object","properties":{"repo":{"type":"string"}},"required":["repo"]}}`),
		}},
		"chat": {tools: []json.RawMessage{
			json.RawMessage(`{"name":"send_message","description":"Send a message to a chat channel.","inputSchema":{"type":"object","properties":{"channel":{"type":"string"},"text":{"type":"string"}},"required":["channel","text"]}}`),
			json.RawMessage(`{"name":"list_channels","description":"List chat channels.","inputSchema":{"type":"object"}}`),
		}},
	}
	return New(startFakes(t, servers, conns), opts)
}

// transcript is a client of a proxy over in-memory stdio that records, in order, every
// message it sends and receives, and compares the record with a golden file.
type transcript struct {
	t        *testing.T
	sections []section
	in       io.WriteCloser   // to the proxy's stdin
	lines    <-chan []byte    // the proxy's stdout, one message a line
	methods  map[int64]string // the method of each request sent, by id
	nextID   int64
}

type section struct {
	name string
	data []byte
}

// newTranscript serves p over stdio until the test ends. The test owns the two goroutines:
// its cleanup closes stdin, which ends ServeStdio, and waits for both.
func newTranscript(t *testing.T, p *Server) *transcript {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	lines := make(chan []byte, 16)
	served, read := make(chan error, 1), make(chan struct{})
	go func() {
		err := p.ServeStdio(context.Background(), inR, outW)
		outW.Close()
		served <- err
	}()
	go func() {
		defer close(read)
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		for range lines { // what is still written, so that ServeStdio can end
		}
		if err := <-served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		<-read
	})
	return &transcript{t: t, in: inW, lines: lines, methods: map[int64]string{}}
}

// initialize opens the session as a client speaking protocol 2025-11-25 would.
func (c *transcript) initialize() { c.initializeAs("golden") }

// initializeAs opens the session as the client with the given clientInfo.name.
func (c *transcript) initializeAs(client string) {
	c.initializeWith(client, map[string]any{"roots": map[string]any{}})
}

// initializeWith opens the session as the client with the given name and capabilities.
func (c *transcript) initializeWith(client string, caps map[string]any) {
	c.roundTrip("initialize", map[string]any{
		"protocolVersion": "2025-11-25",
		"capabilities":    caps,
		"clientInfo":      map[string]any{"name": client, "version": "1"},
	})
	c.write("notifications/initialized", map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// send sends a request and returns its id.
func (c *transcript) send(method string, params any) int64 {
	c.nextID++
	id := c.nextID
	c.methods[id] = method
	c.write(fmt.Sprintf("%d %s", id, method), map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	return id
}

// roundTrip sends a request and receives its response, which must be the next message.
func (c *transcript) roundTrip(method string, params any) {
	c.expect(c.send(method, params))
}

func (c *transcript) write(name string, msg any) {
	c.t.Helper()
	raw, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	c.add("-> "+name, pretty(c.t, raw))
	if _, err := c.in.Write(append(raw, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// expect receives the next message and records it. want is the id of the response or the
// method of the notification it must be.
func (c *transcript) expect(want any) {
	c.t.Helper()
	c.next()
	if name := c.sections[len(c.sections)-1].name; !c.is(name, want) {
		c.t.Fatalf("got %s, want %v", name, want)
	}
}

// is reports whether the recorded section name is that of the message want describes: the
// id of a response, or the method of a notification.
func (c *transcript) is(name string, want any) bool {
	if id, ok := want.(int64); ok {
		return name == fmt.Sprintf("<- %d %s", id, c.methods[id])
	}
	return name == fmt.Sprintf("<- %s", want)
}

// next receives the next message and records it.
func (c *transcript) next() {
	c.t.Helper()
	var line []byte
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("stdout ended")
		}
		line = l
	case <-time.After(10 * time.Second):
		c.t.Fatalf("no message within 10s")
	}
	var m struct {
		ID     *int64 `json:"id"`
		Method string `json:"method"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("stdout line is not JSON-RPC: %v: %s", err, line)
	}
	name := m.Method
	if m.ID != nil {
		name = fmt.Sprintf("%d %s", *m.ID, c.methods[*m.ID])
	}
	c.add("<- "+name, pretty(c.t, line))
}

// expectUnordered receives len(wants) messages, in any order, and records them in the order
// of wants.
func (c *transcript) expectUnordered(wants ...any) {
	c.t.Helper()
	start := len(c.sections)
	got := make([]section, len(wants))
	for range wants {
		c.next()
		last := c.sections[len(c.sections)-1]
		i := slices.IndexFunc(wants, func(w any) bool { return w != nil && c.is(last.name, w) })
		if i < 0 {
			c.t.Fatalf("got %s, want one of %v", last.name, wants)
		}
		got[i], wants[i] = last, nil
	}
	c.sections = append(c.sections[:start], got...)
}

func (c *transcript) add(name string, data []byte) {
	c.sections = append(c.sections, section{name, data})
}

// volatile matches the values that change from run to run: session ids and durations.
var volatile = regexp.MustCompile(`("(?:sessionId|session_id|duration_ms|[a-zA-Z]*Duration)": )("[^"]*"|[0-9.]+)`)

// pretty indents a JSON message as it was written, keeping its key order, and replaces
// volatile values with a placeholder.
func pretty(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	b.WriteByte('\n')
	return volatile.ReplaceAll(b.Bytes(), []byte(`$1"<volatile>"`))
}

// check compares the transcript with testdata/name, or rewrites the file with -update.
func (c *transcript) check(name string) {
	c.t.Helper()
	path := filepath.Join("testdata", name)
	comment := "What the client reads; rewrite with: go test ./proxy -run TestGolden -update\n"
	got := formatTxtar(comment, c.sections)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			c.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		c.t.Fatalf("%v (run with -update to create it)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	_, wantSections := parseTxtar(want)
	for i := range max(len(c.sections), len(wantSections)) {
		var g, w section
		if i < len(c.sections) {
			g = c.sections[i]
		}
		if i < len(wantSections) {
			w = wantSections[i]
		}
		if g.name != w.name || !bytes.Equal(g.data, w.data) {
			c.t.Errorf("%s: section %d differs (if the change is meant, rewrite with -update and review the diff):\n--- got -- %s --\n%s--- want -- %s --\n%s",
				path, i+1, g.name, g.data, w.name, w.data)
			return
		}
	}
	c.t.Errorf("%s differs from the transcript outside its sections (run with -update to rewrite it)", path)
}

// formatTxtar writes sections in the txtar format: a comment, then each section as a line
// "-- name --" followed by its data.
func formatTxtar(comment string, sections []section) []byte {
	var b bytes.Buffer
	b.WriteString(comment)
	for _, s := range sections {
		fmt.Fprintf(&b, "-- %s --\n", s.name)
		b.Write(s.data)
		if len(s.data) > 0 && s.data[len(s.data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// parseTxtar reads what formatTxtar writes.
func parseTxtar(data []byte) (comment string, sections []section) {
	var head strings.Builder
	for line := range strings.SplitAfterSeq(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "-- "); ok && strings.HasSuffix(name, " --") {
			sections = append(sections, section{name: strings.TrimSuffix(name, " --")})
			continue
		}
		if len(sections) == 0 {
			head.WriteString(line)
		} else {
			last := &sections[len(sections)-1]
			last.data = append(last.data, line...)
		}
	}
	return head.String(), sections
}

func TestTxtarRoundTrip(t *testing.T) {
	sections := []section{
		{"-> 1 tools/list", []byte("{\n  \"id\": 1\n}\n")},
		{"empty", nil},
		{"text", []byte("a line\n-- not a header\n\nlast\n")},
	}
	data := formatTxtar("comment\n", sections)
	comment, got := parseTxtar(data)
	if comment != "comment\n" {
		t.Errorf("comment = %q, want %q", comment, "comment\n")
	}
	if len(got) != len(sections) {
		t.Fatalf("parseTxtar(%q) = %d sections, want %d", data, len(got), len(sections))
	}
	for i := range sections {
		if got[i].name != sections[i].name || !bytes.Equal(got[i].data, sections[i].data) {
			t.Errorf("section %d = %q %q, want %q %q", i, got[i].name, got[i].data, sections[i].name, sections[i].data)
		}
	}
}
