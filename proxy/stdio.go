package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/toolsift/toolsift/internal/jsonrpc"
)

// ServeStdio serves one client over in and out until in ends or ctx is done. Only JSON-RPC
// is written to out.
//
// When ctx ends (SIGTERM), toolsift stops reading but goes on answering the requests it has
// read, for up to ShutdownGrace, then cancels the calls still in flight.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	// Output passes through a responseWatcher, so the re-list handshake can wait for the
	// tools/list response to be written (see session, step 4), and so that lists and search
	// results are spliced (see pendingSplices).
	watcher := &responseWatcher{w: out, lists: &pendingSplices{relist: true}}
	listen, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	input := &drainReader{r: in, stopped: ctx.Done(), released: listen.Done(), maxLine: s.opts.MaxRequestBytes,
		refuse: func(id []byte) {
			s.log.Warn("request refused: too large", "max_bytes", s.opts.MaxRequestBytes)
			if id != nil {
				msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32600,"message":"request over %d bytes, toolsift's limit"}}`+"\n", id, s.opts.MaxRequestBytes)
				watcher.Write([]byte(msg))
			}
		}}
	watcher.answered = input.owed.answered
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		select {
		case <-listen.Done():
			return
		case <-ctx.Done():
		}
		grace := time.NewTimer(s.opts.ShutdownGrace)
		defer grace.Stop()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for input.owed.len() > 0 {
			select {
			case <-grace.C:
				s.log.Warn("requests unanswered at shutdown", "pending", input.owed.len(), "grace", s.opts.ShutdownGrace.String())
				stop()
				return
			case <-tick.C:
			}
		}
		stop()
	}()
	err := newStdioConn(s, watcher).serve(listen, input)
	stop()
	<-drained
	return err
}

// drainReader reads a client's requests a line at a time, noting which are owed an answer
// and carrying big numeric ids through mcp-go (see wrapBigID), until stopped; from then on
// it reads nothing (what comes after a SIGTERM is not taken), and ends once released.
type drainReader struct {
	r        io.Reader
	stopped  <-chan struct{}
	released <-chan struct{}
	owed     owedSet
	// maxLine bounds a request; refuse is told, once the line has ended, the id (nil if none
	// was found) of one over it.
	maxLine int
	refuse  func(id []byte)

	// Only next uses these.
	buf      [32 << 10]byte
	partial  []byte    // the start of a line whose end has not been read
	skipping bool      // the rest of a line over maxLine is being read and dropped
	head     []byte    // while skipping: the line's start, and
	tail     []byte    // its last bytes, where the id may be
	out      []message // checked lines, to hand out
	err      error     // the reader's error, once out is spent
}

// message is a line the client wrote, and what toolsift reads of it (once: the line is
// decoded here, then by mcp-go's server).
type message struct {
	line           []byte
	id             json.RawMessage
	method         string
	result, errObj json.RawMessage
	err            error // the line is not JSON, or not JSON-RPC as toolsift reads it
}

func parseMessage(line []byte) message {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	err := json.Unmarshal(line, &m)
	return message{line: line, id: m.ID, method: m.Method, result: m.Result, errObj: m.Error, err: err}
}

// isRequest reports a request of the client's: one owed an answer.
func (m message) isRequest() bool { return m.err == nil && len(m.id) > 0 && m.method != "" }

// next returns the next message, or io.EOF once stopped and released, or the reader's error.
func (d *drainReader) next() (message, error) {
	for len(d.out) == 0 {
		if d.isStopped() {
			<-d.released
			return message{}, io.EOF
		}
		if d.err != nil {
			return message{}, d.err
		}
		n, err := d.r.Read(d.buf[:])
		if d.isStopped() {
			<-d.released
			return message{}, io.EOF
		}
		d.err = err
		d.take(d.buf[:n])
		if err != nil && len(d.partial) > 0 { // a last line without its newline
			d.line(d.partial)
			d.partial = nil
		}
	}
	m := d.out[0]
	d.out = d.out[1:]
	return m, nil
}

func (d *drainReader) isStopped() bool {
	select {
	case <-d.stopped:
		return true
	default:
		return false
	}
}

// endsKept is how much of each end of a line over maxLine is kept, to find its id.
const endsKept = 4096

// take adds what was read: each line it completes, checked, to out.
func (d *drainReader) take(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		switch {
		case d.skipping:
			d.tail = append(d.tail, chunk...)
			d.tail = d.tail[max(0, len(d.tail)-endsKept):]
		case len(d.partial)+len(chunk) > d.maxLine:
			d.head = append(d.partial[:min(len(d.partial), endsKept):min(len(d.partial), endsKept)], chunk[:min(len(chunk), max(0, endsKept-len(d.partial)))]...)
			d.tail = append([]byte(nil), chunk[max(0, len(chunk)-endsKept):]...)
			d.partial, d.skipping = nil, true
		default:
			d.partial = append(d.partial, chunk...)
		}
		if i < 0 {
			return
		}
		if d.skipping {
			d.refuse(jsonrpc.IDOfEnds(d.head, d.tail))
			d.skipping, d.head, d.tail = false, nil, nil
		} else {
			d.line(append(d.partial, '\n'))
			d.partial = nil
		}
		b = b[i+1:]
	}
}

// line adds a line to out, with a big id wrapped, and notes a request as owed an answer.
// A blank line is no message.
func (d *drainReader) line(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	m := parseMessage(wrapBigID(line)) // wrapped first: the answer carries the id as mcp-go saw it
	if m.isRequest() {
		d.owed.add(string(m.id))
	}
	d.out = append(d.out, m)
}

// owedSet holds the ids of the requests read and not yet answered. The reader adds, the
// writer of answers takes away; answers to no request on the list (a parse error's, a
// refusal's) change nothing.
type owedSet struct {
	mu  sync.Mutex // guards ids
	ids map[string]bool
}

func (o *owedSet) add(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ids == nil {
		o.ids = map[string]bool{}
	}
	o.ids[id] = true
}

func (o *owedSet) answered(id []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.ids, string(id))
}

func (o *owedSet) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ids)
}

// request returns a client's request's id and method, if the message is a request (a
// notification or an answer to toolsift is not).
func request(msg []byte) (id []byte, method string, ok bool) {
	if m := parseMessage(msg); m.isRequest() {
		return m.id, m.method, true
	}
	return nil, "", false
}

// responseID returns the id of an answer toolsift writes, as mcp-go writes it: jsonrpc, id,
// then result or error (a request of toolsift's own has method after the id).
func responseID(p []byte) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte(`{"jsonrpc":"2.0","id":`)) {
		return nil, false
	}
	start, end, ok := jsonrpc.IDSpan(p)
	if !ok {
		return nil, false
	}
	after := bytes.TrimLeft(p[end:], ", ")
	if !bytes.HasPrefix(after, []byte(`"result":`)) && !bytes.HasPrefix(after, []byte(`"error":`)) {
		return nil, false
	}
	return p[start:end], true
}
