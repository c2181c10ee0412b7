package gate

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimit keeps the HTTP service's open connections at or under max. A connection that
// arrives at the limit takes the place of the one that has waited longest without a
// request in progress (a keep-alive, or one that has sent nothing yet), so that idle or
// abandoned sockets, which anyone who can connect can open, never keep a client with a
// request from being served; when every connection is busy, the newcomer is closed.
type connLimit struct {
	net.Listener
	max int

	mu    sync.Mutex // guards conns
	conns map[net.Conn]*connInfo
}

type connInfo struct {
	busy  bool      // serving a request (http.StateActive)
	since time.Time // when it last became idle, or was accepted
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, max: max, conns: map[net.Conn]*connInfo{}}
}

// Accept returns the next connection, making room for it.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		c.Close()
	}
}

// admit records c, closing the longest idle connection if c would exceed the limit; it
// reports false when every connection is busy.
func (l *connLimit) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var victim net.Conn
		var oldest time.Time
		for vc, info := range l.conns {
			if !info.busy && (victim == nil || info.since.Before(oldest)) {
				victim, oldest = vc, info.since
			}
		}
		if victim == nil {
			return false
		}
		// The server sees the close as the end of the connection, and reports it closed.
		victim.Close()
		delete(l.conns, victim)
	}
	l.conns[c] = &connInfo{since: time.Now()}
	return true
}

// track is the http.Server's ConnState hook.
func (l *connLimit) track(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	info, ok := l.conns[c]
	if !ok {
		return
	}
	switch state {
	case http.StateActive:
		info.busy = true
	case http.StateIdle:
		info.busy, info.since = false, time.Now()
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
}

// open returns the number of connections held.
func (l *connLimit) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
