package upstream

import (
	"strings"
	"sync"
)

// Tail keeps the last bytes written to it, such as a server's standard error, so that a
// failure can be reported with what the server said last.
type Tail struct {
	max int
	mu  sync.Mutex // guards buf
	buf []byte
}

// NewTail returns a Tail that keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

// Write keeps p, dropping the oldest bytes beyond the limit. It never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept text, trimmed, starting at a line boundary where it can.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.TrimSpace(s)
}

// Reset forgets what was written, so that a new attempt reports only its own output.
func (t *Tail) Reset() {
	t.mu.Lock()
	t.buf = t.buf[:0]
	t.mu.Unlock()
}
