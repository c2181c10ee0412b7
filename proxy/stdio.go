package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves one client over in and out until in ends or ctx is done. Only JSON-RPC
// is written to out.
//
// When ctx ends (SIGTERM), toolsift stops reading but goes on answering the requests it has
// read, for up to ShutdownGrace: mcp-go, stopped at once, would cancel the calls in flight
// and drop the queued ones unanswered.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	// mcp-go runs 5 tool calls at a time by default (100 at most), and tool_search is a tool
	// call: leave room beside MaxCalls calls for searches and refusals.
	server.WithWorkerPoolSize(min(s.opts.MaxCalls+8, 100))(stdio)
	// Its output passes through a responseWatcher, so the re-list handshake can wait for
	// the tools/list response to be written (see session, step 4).
	stdio.SetContextFunc(func(ctx context.Context) context.Context {
		sess := s.sessionFrom(ctx)
		sess.mu.Lock()
		sess.watched = true
		sess.mu.Unlock()
		return ctx
	})
	listen, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	watcher := &responseWatcher{w: out, s: s}
	input := &drainReader{r: in, stopped: ctx.Done(), released: listen.Done(), maxLine: s.opts.MaxRequestBytes,
		refuse: func(id []byte) {
			s.log.Warn("request refused: too large", "max_bytes", s.opts.MaxRequestBytes)
			if id != nil {
				msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32600,"message":"request over %d bytes, toolsift's limit"}}`+"\n", id, s.opts.MaxRequestBytes)
				watcher.Write([]byte(msg))
			}
		}}
	watcher.answered = func() { input.pending.Add(-1) }
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
		for input.pending.Load() > 0 {
			select {
			case <-grace.C:
				s.log.Warn("requests unanswered at shutdown", "pending", input.pending.Load(), "grace", s.opts.ShutdownGrace.String())
				stop()
				return
			case <-tick.C:
			}
		}
		stop()
	}()
	err := stdio.Listen(listen, input, watcher)
	stop()
	<-drained
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// drainReader reads a client's requests a line at a time, counting those not yet answered
// and carrying big numeric ids through mcp-go (see wrapBigID), until stopped; from then on
// it reads nothing (what comes after a SIGTERM is not taken), and ends once released.
type drainReader struct {
	r        io.Reader
	stopped  <-chan struct{}
	released <-chan struct{}
	// pending counts requests read and not yet answered; responseWatcher counts answers.
	pending atomic.Int64

	// maxLine bounds a request; refuse is told the id (nil if none was found) of one over it.
	maxLine int
	refuse  func(id []byte)

	// Only Read uses these.
	buf      [32 << 10]byte
	partial  []byte // the start of a line whose end has not been read
	skipping bool   // the rest of a line over maxLine is being read and dropped
	out      []byte // checked lines, to hand out
	err      error  // the reader's error, once out is spent
}

func (d *drainReader) Read(p []byte) (int, error) {
	for len(d.out) == 0 {
		if d.isStopped() {
			<-d.released
			return 0, io.EOF
		}
		if d.err != nil {
			return 0, d.err
		}
		n, err := d.r.Read(d.buf[:])
		if d.isStopped() {
			<-d.released
			return 0, io.EOF
		}
		d.err = err
		d.take(d.buf[:n])
		if err != nil && len(d.partial) > 0 { // a last line without its newline
			d.out = append(d.out, d.line(d.partial)...)
			d.partial = nil
		}
	}
	n := copy(p, d.out)
	d.out = d.out[n:]
	return n, nil
}

func (d *drainReader) isStopped() bool {
	select {
	case <-d.stopped:
		return true
	default:
		return false
	}
}

// take adds what was read: each line it completes, checked, to out.
func (d *drainReader) take(b []byte) {
	for {
		i := bytes.IndexByte(b, '\n')
		if d.skipping {
			if i < 0 {
				return
			}
			d.skipping, b = false, b[i+1:]
			continue
		}
		if i < 0 || len(d.partial)+i > d.maxLine {
			if i < 0 {
				d.partial = append(d.partial, b...)
			} else {
				d.partial = append(d.partial, b[:i]...)
			}
			if len(d.partial) <= d.maxLine {
				return
			}
			var id []byte
			if m := requestID.FindSubmatch(d.partial[:min(len(d.partial), 4096)]); m != nil {
				id = m[1]
			}
			d.refuse(id)
			d.partial = nil
			if i < 0 {
				d.skipping = true
				return
			}
			b = b[i+1:]
			continue
		}
		line := b[:i+1]
		if len(d.partial) > 0 {
			line = append(d.partial, line...)
			d.partial = nil
		}
		d.out = append(d.out, d.line(line)...)
		b = b[i+1:]
	}
}

// line counts a request and wraps a big id.
func (d *drainReader) line(line []byte) []byte {
	if isRequest(line) {
		d.pending.Add(1)
	}
	return wrapBigID(line)
}

// requestID finds a request's id near its start.
var requestID = regexp.MustCompile(`"id"\s*:\s*(-?[0-9]+|"(?:[^"\\]|\\.)*")`)

// isRequest reports whether a client's line is a request, which gets an answer.
func isRequest(line []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return json.Unmarshal(line, &m) == nil && len(m.ID) > 0 && m.Method != ""
}

// isResponse reports whether a message toolsift writes is an answer to a request. mcp-go
// writes an answer's members in the order jsonrpc, id, result or error, and a request of
// its own with method after id.
func isResponse(p []byte) bool {
	rest, ok := bytes.CutPrefix(p, []byte(`{"jsonrpc":"2.0","id":`))
	if !ok {
		return false
	}
	head := rest[:min(len(rest), 128)]
	r, e, m := bytes.Index(head, []byte(`"result":`)), bytes.Index(head, []byte(`"error":`)), bytes.Index(head, []byte(`"method":`))
	first := r
	if first < 0 || e >= 0 && e < first {
		first = e
	}
	return first >= 0 && (m < 0 || first < m)
}
