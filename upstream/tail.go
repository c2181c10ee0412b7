package upstream

import (
	"fmt"
	"regexp"
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

// brokenNpx finds the folder of npx's cache that a failed npx names, in npm's own error
// text, when the folder lacks its package.json.
var brokenNpx = regexp.MustCompile(`ENOENT[^\n]*?([^\s'"]*[/\\]_npx[/\\][0-9a-f]+)[/\\]package\.json`)

// explain turns what a server that failed to start wrote last into a short reason: a fix,
// when the failure is a known one, else its last line.
func explain(stderr string) string {
	if m := brokenNpx.FindStringSubmatch(stderr); m != nil {
		// npm leaves the folder half-written when a download is interrupted, and every later
		// npx of the same package then fails at once.
		return fmt.Sprintf("npx's cache folder %s is broken, as an interrupted download leaves it: delete that folder and the server is downloaded again", m[1])
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if r := []rune(last); len(r) > 200 {
		last = string(r[:200]) + "…"
	}
	return last
}
