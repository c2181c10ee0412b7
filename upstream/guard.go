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
//     log line naming it, so that the server's other tools are served (the message is
//     decoded and encoded again without them).
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
// A message that is no tools/list result goes on as it is; one nested too deeply for Go's
// decoder to read at all is answered with an error in the server's place.
func (g *lineGuard) dropDeepTools(line []byte) []byte {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		g.log.Warn("upstream message unreadable: nested too deep", "error", err)
		return errorAnswer(jsonrpc.IDOfEnds(line, bytes.TrimSpace(line)), "the answer nests deeper than toolsift reads (10,000 levels)")
	}
	var result map[string]json.RawMessage
	var tools []json.RawMessage
	if json.Unmarshal(msg["result"], &result) != nil || json.Unmarshal(result["tools"], &tools) != nil {
		return line
	}
	kept := tools[:0]
	for _, tool := range tools {
		if depth(tool) <= maxToolDepth {
			kept = append(kept, tool)
			continue
		}
		var t struct{ Name string }
		_ = json.Unmarshal(tool, &t)
		g.log.Warn("upstream tool skipped: nested too deep", "tool", t.Name, "max_depth", maxToolDepth)
	}
	var err error
	if result["tools"], err = json.Marshal(kept); err != nil {
		return line
	}
	if msg["result"], err = json.Marshal(result); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(out, '\n')
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
