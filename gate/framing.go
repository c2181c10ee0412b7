package gate

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// A request that carries both Content-Length and Transfer-Encoding is framed two ways: a
// server in front that reads one and toolsift that reads the other disagree on where it
// ends, and the bytes between are answered as a request of their own (request smuggling).
// RFC 9112 §6.1 lets a server refuse such a request and requires it to close the
// connection. net/http removes Content-Length from a chunked request before a handler sees
// it, so the gate reads the request heads as they arrive on the connection to know.

// maxHead bounds the head the watcher keeps while it waits for the head's end; net/http
// refuses a longer one itself (MaxHeaderBytes).
const maxHead = http.DefaultMaxHeaderBytes + 4096

// framedListener gives each accepted connection a head watcher.
type framedListener struct{ net.Listener }

func (l framedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framedConn{Conn: c}, nil
}

// framedConn notes, for each request head read from the connection, whether it named
// both Content-Length and Transfer-Encoding. It follows the connection's framing through
// bodies of a stated length; after a chunked request it stops, and the gate closes the
// connection once that request is answered, so the heads it noted are always the ones the
// server reads, in order.
type framedConn struct {
	net.Conn

	mu    sync.Mutex // guards heads
	heads []bool     // per request head read and not yet taken: both framings named

	// Touched only by Read, which the server calls from one goroutine at a time.
	head []byte // the head read so far
	skip int64  // body bytes still to pass over
	lost bool   // no longer following: after a chunked request, or a head too large
}

func (c *framedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.scan(p[:n])
	return n, err
}

func (c *framedConn) scan(p []byte) {
	for len(p) > 0 && !c.lost {
		if c.skip > 0 {
			n := min(int64(len(p)), c.skip)
			c.skip -= n
			p = p[n:]
			continue
		}
		start := len(c.head)
		c.head = append(c.head, p...)
		end := headEnd(c.head, max(0, start-3))
		if end < 0 {
			c.lost = len(c.head) > maxHead
			return
		}
		length, chunked := framing(c.head[:end])
		p = p[end-start:]
		c.head = c.head[:0]
		c.mu.Lock()
		c.heads = append(c.heads, length >= 0 && chunked)
		c.mu.Unlock()
		switch {
		case chunked:
			c.lost = true
		case length > 0:
			c.skip = length
		}
	}
}

// take returns whether the oldest head not yet taken named both framings.
func (c *framedConn) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.heads) == 0 {
		return false
	}
	both := c.heads[0]
	c.heads = c.heads[1:]
	return both
}

// headEnd returns the offset just past the empty line that ends the head in b, searching
// from `from`, or -1. Lines end in LF, with or without CR, as net/http reads them.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// framing reads a request head's Content-Length (-1 when absent or unreadable) and
// whether it names a Transfer-Encoding.
func framing(head []byte) (length int64, chunked bool) {
	length = -1
	for _, line := range bytes.Split(head, []byte("\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && n >= 0 {
				length = n
			} else {
				length = 0
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = true
		}
	}
	return length, chunked
}

type connKey struct{}

// withConn is the server's ConnContext: it lets a request find its connection's watcher.
func withConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// doublyFramed takes the request's head note: whether it named both Content-Length and
// Transfer-Encoding. Every request takes its note, in order.
func doublyFramed(r *http.Request) bool {
	c, ok := r.Context().Value(connKey{}).(*framedConn)
	return ok && c.take()
}
