package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolsift/toolsift/internal/jsonrpc"
)

// DefaultMaxMessageBytes bounds one message from a stdio server when its configuration sets
// no maxResultBytes.
const DefaultMaxMessageBytes = 32 << 20

// maxToolDepth is the deepest a tool of a tools/list result may nest. Go's decoder gives up
// at 10,000 levels, and with it on the whole message: one tool's absurd schema would cost
// the server all of its tools.
const maxToolDepth = 512

// lineGuard sits between a stdio server's stdout and the JSON-RPC transport, which reads
// one message a line. It checks each line before the transport sees it:
//   - a line that is not JSON is logged (the transport would drop it without a word);
//   - a message over max bytes is not held: an answer becomes an error answer naming the
//     limit, anything else is dropped, both with a log line;
//   - a tools/list result's tools nested deeper than maxToolDepth are taken out, each with a
//     log line naming it, so that the server's other tools are served (the message is read
//     as tokens and written again without them).
//
// Everything else passes byte for byte.
type lineGuard struct {
	r   *bufio.Reader
	log *slog.Logger
	max int

	out []byte // what is left of the checked line to hand out
	err error  // the reader's error, once out is spent
}

func newLineGuard(r io.Reader, max int, log *slog.Logger) *lineGuard {
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	return &lineGuard{r: bufio.NewReaderSize(r, 64<<10), log: log, max: max}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.out) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, tail, over, err := g.readLine()
		g.err = err
		if over {
			g.out = g.tooLarge(line, tail)
		} else {
			g.out = g.check(line)
		}
	}
	n := copy(p, g.out)
	if g.out = g.out[n:]; len(g.out) == 0 {
		g.out = nil // else the line, a whole tools/list result maybe, is held until the next
	}
	return n, nil
}

// endsKept is how much of each end of a message over the limit is kept: its id is at one of
// them.
const endsKept = 4096

// readLine reads one line, newline included. Past max bytes it keeps only the line's first
// and last bytes (where its id is), and reports over.
func (g *lineGuard) readLine() (line, tail []byte, over bool, err error) {
	for {
		chunk, err := g.r.ReadSlice('\n')
		if over {
			tail = append(tail, chunk...)
			tail = tail[max(0, len(tail)-endsKept):]
		} else {
			line = append(line, chunk...)
			if len(line) > g.max {
				tail = append([]byte(nil), line[max(0, len(line)-endsKept):]...)
				n := min(len(line), endsKept)
				line, over = line[:n:n], true
			}
		}
		if err != bufio.ErrBufferFull {
			return line, tail, over, err
		}
	}
}

// tooLarge answers, in the server's place, a message over the limit that answers a request
// of toolsift's; any other is dropped.
func (g *lineGuard) tooLarge(head, tail []byte) []byte {
	id := jsonrpc.IDOfEnds(head, bytes.TrimSpace(tail))
	answer := id != nil && !bytes.Contains(head, []byte(`"method"`)) && !bytes.Contains(tail, []byte(`"method"`))
	if !answer {
		g.log.Warn("upstream message dropped: too large", "max_bytes", g.max)
		return nil
	}
	g.log.Warn("upstream answer too large: answered with an error", "id", string(id), "max_bytes", g.max)
	return errorAnswer(id, fmt.Sprintf("the answer was over %d bytes, toolsift's limit (maxResultBytes)", g.max))
}

// errorAnswer is an error answer, in the server's place, to toolsift's request id (as the
// server wrote it), as a line; nil if id is none.
func errorAnswer(id []byte, msg string) []byte {
	rid, err := mcp.ParseRequestId(id)
	if err != nil || rid.IsNil() {
		return nil
	}
	line, err := json.Marshal(mcp.NewJSONRPCError(rid, mcp.INTERNAL_ERROR, msg, nil))
	if err != nil {
		return nil
	}
	return append(line, '\n')
}

func (g *lineGuard) check(line []byte) []byte {
	text := bytes.TrimSpace(line)
	if len(text) == 0 {
		return line
	}
	if text[0] != '{' && text[0] != '[' {
		g.log.Warn("upstream wrote a line that is not JSON-RPC: ignored", "line", string(text[:min(len(text), 200)]))
		return nil
	}
	// Counting brackets is cheaper than scanning, and enough for almost every message.
	if bytes.Count(text, []byte("{"))+bytes.Count(text, []byte("[")) <= maxToolDepth || depth(text) <= maxToolDepth {
		return line
	}
	return g.dropDeepTools(line)
}

// dropDeepTools takes out of a tools/list result the tools nested deeper than maxToolDepth.
// It reads the message as a stream of tokens, which has no depth limit (decoding it whole
// would fail on the very tool it must take out), and writes it again, in its order and with
// its numbers as written, without them. A line that is not JSON goes on as it is.
func (g *lineGuard) dropDeepTools(line []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var out, tool tokenWriter
	inTool, depth, deepest := false, 0, 0
	name := ""
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return append(out.b, '\n')
		}
		if err != nil {
			return line
		}
		if !inTool {
			if t == json.Delim('{') && out.inTools() {
				inTool, depth, deepest, name, tool = true, 0, 0, "", tokenWriter{}
			} else {
				out.write(t)
				continue
			}
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if s, ok := t.(string); ok && depth == 1 && tool.valueOf("name") {
			name = s
		}
		tool.write(t)
		if depth > 0 {
			continue
		}
		inTool = false
		if deepest > maxToolDepth {
			g.log.Warn("upstream tool skipped: nested too deep", "tool", name, "max_depth", maxToolDepth)
			continue
		}
		out.raw(tool.b)
	}
}

// tokenWriter writes JSON from a stream of tokens (json.Decoder.Token, with UseNumber).
type tokenWriter struct {
	b     []byte
	stack []tokenFrame
}

// tokenFrame is an object or array being written.
type tokenFrame struct {
	object bool
	n      int    // tokens written in it: in an object, keys and values in turn
	key    string // in an object, the last key written
}

// write writes t, with the comma or colon before it.
func (w *tokenWriter) write(t json.Token) {
	if d, ok := t.(json.Delim); ok && (d == '}' || d == ']') {
		w.b = append(w.b, byte(d))
		w.stack = w.stack[:len(w.stack)-1]
		return
	}
	isKey := w.separate()
	switch v := t.(type) {
	case json.Delim:
		w.b = append(w.b, byte(v))
		w.stack = append(w.stack, tokenFrame{object: v == '{'})
	case string:
		if isKey {
			w.stack[len(w.stack)-1].key = v
		}
		q, _ := json.Marshal(v)
		w.b = append(w.b, q...)
	case json.Number:
		w.b = append(w.b, v...)
	case bool:
		w.b = strconv.AppendBool(w.b, v)
	case nil:
		w.b = append(w.b, "null"...)
	}
}

// raw writes a whole value, already written as JSON.
func (w *tokenWriter) raw(value []byte) {
	w.separate()
	w.b = append(w.b, value...)
}

// separate writes what comes before the next token in the current object or array, counts
// it, and reports whether it is an object's key.
func (w *tokenWriter) separate() (isKey bool) {
	if len(w.stack) == 0 {
		return false
	}
	top := &w.stack[len(w.stack)-1]
	switch {
	case top.object && top.n%2 == 1:
		w.b = append(w.b, ':')
	case top.n > 0:
		w.b = append(w.b, ',')
	}
	isKey = top.object && top.n%2 == 0
	top.n++
	return isKey
}

// inTools reports whether the next token is an element of the array result.tools.
func (w *tokenWriter) inTools() bool {
	s := w.stack
	return len(s) == 3 && s[0].object && s[0].key == "result" && s[1].object && s[1].key == "tools" && !s[2].object
}

// valueOf reports whether the next token is the value of key in the current object.
func (w *tokenWriter) valueOf(key string) bool {
	if len(w.stack) == 0 {
		return false
	}
	top := w.stack[len(w.stack)-1]
	return top.object && top.n%2 == 1 && top.key == key
}

// scan walks JSON text without decoding it (it may nest too deeply to decode): str is
// called for each string, text[start:end] with its quotes, other for each byte outside
// strings; other returning false ends the walk.
func scan(text []byte, str func(start, end int), other func(i int, c byte) bool) {
	start, escaped := -1, false
	for i, c := range text {
		switch {
		case start >= 0:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				str(start, i+1)
				start = -1
			}
		case c == '"':
			start = i
		default:
			if !other(i, c) {
				return
			}
		}
	}
}

// depth is how deeply the JSON text nests objects and arrays.
func depth(text []byte) int {
	d, deepest := 0, 0
	scan(text, func(int, int) {}, func(_ int, c byte) bool {
		switch c {
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
		return true
	})
	return deepest
}

// limitedClient is the HTTP client of an HTTP or SSE server. Its response bodies fail past max bytes in one message, so that no answer is
// held whole beyond toolsift's limit (an SSE stream is long-lived: its messages are
// counted one at a time, from blank line to blank line). It follows no redirect to
// another origin (see stayAtOrigin).
func limitedClient(max int) *http.Client {
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	return &http.Client{
		Transport:     limitTransport{next: http.DefaultTransport, max: max},
		CheckRedirect: stayAtOrigin,
	}
}

// stayAtOrigin is the client's redirect policy: a redirect within the server's origin
// (scheme, host and port) is followed with every header; one to another origin, or from
// https to http, is not followed at all. Go drops Authorization and cookies on a redirect
// to another domain but sends every other header on (an X-Api-Key configured for one
// server), and the OAuth transport adds the server's token to every request it sends, so
// the only redirect that cannot carry a credential away is one not followed.
func stayAtOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if strings.EqualFold(req.URL.Scheme, first.Scheme) && strings.EqualFold(req.URL.Host, first.Host) {
		return nil
	}
	return fmt.Errorf("the server redirected to %s://%s, another origin: not followed, so that its credentials (headers, sign-in) stay with it; if it moved, put its new URL in the configuration",
		req.URL.Scheme, req.URL.Host)
}

type limitTransport struct {
	next http.RoundTripper
	max  int
}

func (t limitTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, max: t.max}
	}
	return resp, err
}

// limitedBody fails a read that takes the current message past max bytes.
type limitedBody struct {
	io.ReadCloser
	max  int
	size int  // bytes of the current message so far
	nl   bool // the last byte read was a newline
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	for _, c := range p[:n] {
		b.size++
		if c == '\r' {
			continue // CRLF line ends count as LF ones
		}
		if c == '\n' && b.nl {
			b.size = 0 // a blank line ends an SSE event
		}
		b.nl = c == '\n'
	}
	if b.size > b.max {
		return 0, fmt.Errorf("the answer was over %d bytes, toolsift's limit (maxResultBytes)", b.max)
	}
	return n, err
}
